// What every fuzz entry shares (fuzz/entries.cpp, fuzz/entries_inputs.cpp): failing loudly
// (the contract of entries.h), reading the bytes as text or as choices.
#pragma once

#include <cxxabi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#include "fuzz/entries.h"
#include "models/support/error.h"
#include "models/support/format.h"

namespace gradsync::fuzz::support {

using models::InputError;

// ---------------------------------------------------------------------------------------
// Failing loudly

[[noreturn]] inline void violated(const std::string& target, const std::string& what) {
  std::fprintf(stderr, "gradsync fuzz %s: %s\n", target.c_str(), what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline std::string type_name_of_current_exception(const std::type_info* info) {
  if (!info) return "unknown type";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(info->name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? std::string(name.get()) : std::string(info->name());
}

// GRADSYNC_FUZZ_SHOW_REJECTIONS=1 prints every InputError (to look at what a corpus exercises).
inline bool show_rejections() {
  static const bool show = [] {
    const char* v = std::getenv("GRADSYNC_FUZZ_SHOW_REJECTIONS");
    return v && *v && std::string(v) != "0";
  }();
  return show;
}

// GRADSYNC_FUZZ_SHOW_CASES=1 prints every case the schedule target builds.
inline bool show_cases() {
  static const bool show = [] {
    const char* v = std::getenv("GRADSYNC_FUZZ_SHOW_CASES");
    return v && *v && std::string(v) != "0";
  }();
  return show;
}

// Runs `body`; InputError is the documented rejection, any other exception a failure.
// Invariant checks inside `body` call violated() themselves (they never throw InputError).
template <typename Body>
Outcome guarded(const char* target, Body&& body) {
  try {
    body();
    return Outcome::accepted;
  } catch (const InputError& e) {
    if (show_rejections()) std::fprintf(stderr, "gradsync fuzz %s: rejected: %s\n", target, e.what());
    return Outcome::rejected;
  } catch (const std::exception& e) {
    violated(target, "uncaught " + type_name_of_current_exception(abi::__cxa_current_exception_type()) +
                         " (not InputError, the documented bad-input path): " + e.what());
  } catch (...) {
    violated(target, "uncaught exception of type " +
                         type_name_of_current_exception(abi::__cxa_current_exception_type()) +
                         " (not InputError, the documented bad-input path)");
  }
}

inline std::string text_of(const std::uint8_t* data, std::size_t size) {
  return size ? std::string(reinterpret_cast<const char*>(data), size) : std::string();
}

inline std::string exact_number(double v) { return models::number_text(v, 17); }

inline bool close(double a, double b) { return a == b || std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), std::fabs(b)); }

// ---------------------------------------------------------------------------------------
// Reading fuzz bytes as choices (the schedule target)

class Choices {
 public:
  Choices(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  std::uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  std::uint32_t u32() {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | byte();
    return v;
  }
  std::uint64_t u64() { return (static_cast<std::uint64_t>(u32()) << 32) | u32(); }
  // 0..n-1 (n > 0)
  std::size_t below(std::size_t n) { return n <= 256 ? byte() % n : u32() % n; }
  // lo..hi inclusive
  std::uint64_t between(std::uint64_t lo, std::uint64_t hi) { return lo + u64() % (hi - lo + 1); }
  bool one_in(unsigned n) { return byte() % n == 0; }
  double unit() { return static_cast<double>(u32()) / 4294967295.0; }  // [0, 1]
  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[below(items.size())];
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

}  // namespace gradsync::fuzz::support
