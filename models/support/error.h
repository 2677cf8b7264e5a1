// Errors for bad input. Every input problem becomes one InputError whose message names
// the file, the place in it (JSON pointer or line), the offending value and what was
// expected; front ends print it and exit with status 2.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "models/support/format.h"  // messages quote numbers as number_text writes them

namespace gradsync::models {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Levenshtein distance, for "did you mean" suggestions.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The closest candidate to `word`, or "" when nothing is close enough to suggest.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// "a, b, c"
std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");

}  // namespace gradsync::models
