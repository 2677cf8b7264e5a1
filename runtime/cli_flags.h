// Flag checks for both command lines, gradsync (experiments/cli) and gradsync-run (runtime/run_main.cpp):
// header-only, the one place outside those two mains that knows CLI11. Messages say what was given
// and what was expected. CLI11's own PositiveNumber / NonNegativeNumber print "Value 0 not in range 0 to
// 1.79769e+308" and let "nan" through; these reject NaN and infinities and say the bounds.
// Unknown flags get a "did you mean" like unknown JSON keys do.
#pragma once

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "models/support/error.h"

namespace gradsync::runtime::cli {

// A whole number in [minimum, maximum].
inline CLI::Validator integer_in(long long minimum, long long maximum) {
  const std::string expected = "a whole number between " + std::to_string(minimum) + " and " + std::to_string(maximum);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || *end != '\0' || errno == ERANGE || v < minimum || v > maximum) {
          return "got \"" + text + "\"; expected " + expected;
        }
        return {};
      },
      "INT in " + std::to_string(minimum) + ".." + std::to_string(maximum));
}

// A finite number in [minimum, maximum] (or (minimum, maximum] when `above_minimum`).
inline CLI::Validator number_in(double minimum, double maximum, bool above_minimum = false) {
  const std::string expected = above_minimum ? "a number above " + models::number_text(minimum) + " and at most " +
                                                   models::number_text(maximum)
                                             : "a number between " + models::number_text(minimum) + " and " +
                                                   models::number_text(maximum);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const bool low = above_minimum ? !(v > minimum) : !(v >= minimum);
        if (text.empty() || *end != '\0' || !std::isfinite(v) || low || v > maximum) {
          return "got \"" + text + "\"; expected " + expected;
        }
        return {};
      },
      "NUMBER");
}

// One of `words`: "got \"ncc\"; expected mpi_host, mpi_cuda or nccl (did you mean 'nccl'?)".
inline CLI::Validator one_of(std::vector<std::string> words) {
  std::string expected;
  for (std::size_t i = 0; i < words.size(); ++i) expected += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        for (const std::string& w : words) {
          if (w == text) return {};
        }
        return "got \"" + text + "\"; expected " + expected + models::did_you_mean(text, words);
      },
      "WORD");
}

// For a CLI::ExtrasError: "unknown flag --topolgy (did you mean '--topology'?)" when one of
// the arguments left over looks like a flag; "" otherwise (CLI11's own message then stands).
inline std::string unknown_flag_message(CLI::App& app) {
  std::vector<CLI::App*> apps = {&app};
  for (std::size_t i = 0; i < apps.size(); ++i) {
    for (CLI::App* sub : apps[i]->get_subcommands()) apps.push_back(sub);
  }
  std::vector<std::string> flags;
  for (CLI::App* a : apps) {
    for (const CLI::Option* opt : a->get_options()) {
      for (const auto& l : opt->get_lnames()) flags.push_back("--" + l);
      for (const auto& s : opt->get_snames()) flags.push_back("-" + s);
    }
  }
  std::string path;
  for (const CLI::App* a : apps) path += (path.empty() ? "" : " ") + a->get_name();
  for (const std::string& arg : app.remaining(true)) {
    if (arg.size() < 2 || arg[0] != '-' || std::isdigit(static_cast<unsigned char>(arg[1])) || arg[1] == '.') continue;
    const std::string flag = arg.substr(0, arg.find('='));
    return path + ": unknown flag " + flag + models::did_you_mean(flag, flags) + "; see " + path + " --help";
  }
  return {};
}

}  // namespace gradsync::runtime::cli
