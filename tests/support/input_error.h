// The message of the InputError a call throws (models/support/error.h).
#pragma once

#include <functional>
#include <string>

#include "models/support/error.h"

namespace test_errors {

// The InputError's message, or "" when `f` throws none: every expectation on the message
// then fails, EXPECT_NE(error_of(...), "") included.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const gradsync::models::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace test_errors
