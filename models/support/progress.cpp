#include "models/support/progress.h"

#include <unistd.h>

#include <iostream>

namespace gradsync::models {

Progress::Progress(std::size_t total, std::ostream& out, bool terminal, bool lines_when_not_a_terminal)
    : total_(total), out_(&out), terminal_(terminal), lines_(lines_when_not_a_terminal) {}

Progress Progress::for_stderr(std::size_t total, bool lines_when_not_a_terminal) {
  return Progress(total, std::cerr, ::isatty(STDERR_FILENO) != 0, lines_when_not_a_terminal);
}

void Progress::step(const std::string& label) {
  ++done_;
  const std::string text = "[" + std::to_string(done_) + "/" + std::to_string(total_) + "] " + label + " ...";
  if (terminal_) {
    const std::string shown = text.size() > 100 ? text.substr(0, 100) : text;
    *out_ << "\r" << shown << std::string(shown.size() < 100 ? 100 - shown.size() : 0, ' ') << std::flush;
    dirty_ = true;
    return;
  }
  if (!lines_) return;
  const int decile = total_ ? static_cast<int>(10 * done_ / total_) : 10;
  if (decile > last_decile_ || done_ == total_) {
    last_decile_ = decile;
    *out_ << text << "\n" << std::flush;
  }
}

void Progress::finish() {
  if (terminal_ && dirty_) *out_ << "\r" << std::string(101, ' ') << "\r" << std::flush;
  dirty_ = false;
}

}  // namespace gradsync::models
