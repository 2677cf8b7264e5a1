#include "runtime/watchdog.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gradsync::runtime {

namespace {

std::atomic<Watchdog*> g_current{nullptr};

// What the signal handler writes, kept ready in plain buffers because a handler may not
// allocate or lock: the line's start ("gradsync-run: rank 2: terminated by signal ") and
// the context, both set outside timed code, and what a stalled wait is pending on. Each
// text has two buffers; the handler reads the one its index names.
constexpr std::size_t kText = 768;
struct SignalText {
  char buffers[2][kText];
  std::atomic<int> current{-1};
  void set(const std::string& text) {
    const int next = current.load() == 0 ? 1 : 0;
    std::snprintf(buffers[next], kText, "%s", text.c_str());
    current.store(next);
  }
  const char* get() const {
    const int i = current.load();
    return i < 0 ? "" : buffers[i];
  }
};
SignalText g_rank_text, g_context_text, g_pending_text;
std::atomic<const char*> g_step{nullptr};
std::atomic<const std::string*> g_phase{nullptr};
std::atomic<std::size_t> g_round_index{0}, g_round_count{0};
std::atomic<bool> g_armed{false};

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void write_text(const char* text) {
  std::size_t n = std::strlen(text);
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, text, n);
    if (w <= 0) return;
    text += w;
    n -= static_cast<std::size_t>(w);
  }
}

void write_number(std::size_t v) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0 && n < 23);
  char out[24];
  for (int i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
  out[n] = '\0';
  write_text(out);
}

// Async-signal-safe: writes the prepared texts and numbers, then dies of the signal.
extern "C" void on_terminate(int signo) {
  if (g_armed.load()) {
    write_text(g_rank_text.get());
    write_text(": terminated by signal ");
    write_number(static_cast<std::size_t>(signo));
    write_text(" during ");
    write_text(g_context_text.get());
    if (const std::string* phase = g_phase.load()) {
      write_text(", round ");
      write_number(g_round_index.load() + 1);
      write_text("/");
      write_number(g_round_count.load());
      write_text(" (");
      write_text(phase->c_str());
      write_text(")");
    } else if (const char* step = g_step.load()) {
      write_text(", ");
      write_text(step);
    }
    if (*g_pending_text.get()) {
      write_text("; ");
      write_text(g_pending_text.get());
    }
    write_text("\n");
  }
  std::signal(signo, SIG_DFL);
  std::raise(signo);
}

}  // namespace

Watchdog::Watchdog(int rank, double timeout_s, std::function<void(const std::string&)> on_timeout)
    : rank_(rank), timeout_s_(timeout_s), on_timeout_(std::move(on_timeout)), last_progress_ns_(now_ns()) {
  if (timeout_s_ > 0) {
    // The thread must not take the termination signals: the main thread reports them.
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    thread_ = std::thread([this] { watch(); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

// The position lives in the process-wide texts and atomics above (one watchdog per
// process), so that the signal handler sees it as it is.
void Watchdog::context(const std::string& text) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    context_ = text;
    pending_.clear();
  }
  g_context_text.set(text.empty() ? "start-up" : text);
  g_pending_text.set("");
  g_step.store(nullptr);
  g_phase.store(nullptr);
  progress();
}

void Watchdog::step(const char* text) {
  g_step.store(text);
  g_phase.store(nullptr);
  progress();
}

void Watchdog::round(std::size_t index, std::size_t count, const std::string* phase) {
  g_round_index.store(index, std::memory_order_relaxed);
  g_round_count.store(count, std::memory_order_relaxed);
  g_phase.store(phase);
  g_step.store(nullptr);
  progress();
}

void Watchdog::stalled(const std::string& pending) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_ = pending;
  }
  g_pending_text.set(pending);
}

void Watchdog::progress() { last_progress_ns_.store(now_ns(), std::memory_order_relaxed); }

std::string Watchdog::position() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out = context_.empty() ? "start-up" : context_;
  if (const std::string* phase = g_phase.load()) {
    out += ", round " + std::to_string(g_round_index.load() + 1) + "/" + std::to_string(g_round_count.load()) + " (" +
           *phase + ")";
  } else if (const char* step = g_step.load()) {
    out += ", " + std::string(step);
  }
  if (!pending_.empty()) out += "; " + pending_;
  return out;
}

std::string Watchdog::where() const { return "rank " + std::to_string(rank_) + ": " + position(); }

Watchdog* Watchdog::current() { return g_current.load(); }

void Watchdog::watch() {
  const auto period = std::chrono::milliseconds(std::clamp(static_cast<int>(timeout_s_ * 100), 10, 500));
  const auto suspended_ns = 2 * std::chrono::duration_cast<std::chrono::nanoseconds>(period).count() + 500'000'000;
  std::int64_t last_check = now_ns();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    stop_cv_.wait_for(lock, period);
    if (stop_) return;
    const std::int64_t now = now_ns();
    // This process itself did not run meanwhile (stopped, then continued): the others were
    // waiting for it, not it for them.
    if (now - last_check > suspended_ns) last_progress_ns_.store(now);
    last_check = now;
    const double idle = static_cast<double>(now - last_progress_ns_.load()) / 1e9;
    if (idle < timeout_s_) continue;
    lock.unlock();
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.1f", idle);
    const std::string message = "gradsync-run: " + where() + ": nothing completed for " + seconds +
                                " s; the rank(s) it waits for died or hang; aborting the job (--timeout sets the limit)";
    std::fprintf(stderr, "%s\n", message.c_str());
    std::fflush(stderr);
    // A moment for the other stuck ranks to say what they wait for too: together the lines
    // point at the rank that died or hangs. Then abort; should that not end the process,
    // end it anyway.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::seconds(5));
      std::_Exit(3);
    }).detach();
    on_timeout_(message);
    std::_Exit(3);
  }
}

WatchdogScope::WatchdogScope(Watchdog& w) {
  g_current.store(&w);
  g_rank_text.set("gradsync-run: rank " + std::to_string(w.rank()));
  w.context("");
  g_armed.store(true);
  struct sigaction action {};
  action.sa_handler = on_terminate;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

WatchdogScope::~WatchdogScope() {
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGINT, SIG_DFL);
  g_armed.store(false);
  g_current.store(nullptr);
}

void watchdog_context(const std::string& text) {
  if (Watchdog* w = Watchdog::current()) w->context(text);
}
void watchdog_step(const char* text) {
  if (Watchdog* w = Watchdog::current()) w->step(text);
}
void watchdog_round(std::size_t index, std::size_t count, const std::string* phase) {
  if (Watchdog* w = Watchdog::current()) w->round(index, count, phase);
}
void watchdog_stalled(const std::string& pending) {
  if (Watchdog* w = Watchdog::current()) w->stalled(pending);
}
void watchdog_progress() {
  if (Watchdog* w = Watchdog::current()) w->progress();
}

}  // namespace gradsync::runtime
