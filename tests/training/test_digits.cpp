// The digits data's reader (training/digits.h): 64 pixels of 0..16 and the digit a line, scaled
// to 0..1; every malformed line refused with its file, line and value; the shipped file read
// whole where configure found it.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "models/support/error.h"
#include "training/digits.h"

using gradsync::models::InputError;
using gradsync::training::Digits;
using gradsync::training::parse_digits_csv;

namespace {

std::string line_of(int pixel, int digit) {
  std::string s;
  for (int i = 0; i < Digits::kPixels; ++i) s += std::to_string(pixel) + ",";
  return s + std::to_string(digit);
}

std::string error_of(const std::string& text) {
  try {
    parse_digits_csv(text, "d.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Digits, ReadsEachImageAndItsDigitScaledToOne) {
  const Digits d = parse_digits_csv(line_of(16, 3) + "\n" + line_of(8, 9) + "\r\n\n", "d.csv");
  ASSERT_EQ(d.rows(), 2U);
  ASSERT_EQ(d.pixels.size(), 2U * Digits::kPixels);
  EXPECT_EQ(d.labels[0], 3);
  EXPECT_EQ(d.labels[1], 9);
  EXPECT_FLOAT_EQ(d.pixels[0], 1.0F);
  EXPECT_FLOAT_EQ(d.pixels[Digits::kPixels], 0.5F);
}

TEST(Digits, RefusesEveryMalformedLineByFileLineAndValue) {
  EXPECT_NE(error_of(line_of(1, 2) + "\n" + line_of(17, 2)).find("d.csv:2: value 1 is '17'; expected a pixel, an integer 0..16"),
            std::string::npos);
  EXPECT_NE(error_of(line_of(1, 10)).find("d.csv:1: value 65 is '10'; expected the digit, an integer 0..9"), std::string::npos);
  EXPECT_NE(error_of(line_of(1, 2) + ",4").find("d.csv:1: more than 65 values"), std::string::npos);
  EXPECT_NE(error_of("1,2,3").find("d.csv:1: 3 values; expected 64 pixels"), std::string::npos);
  EXPECT_NE(error_of(line_of(1, 2).replace(0, 1, "x")).find("value 1 is 'x'"), std::string::npos);
  EXPECT_NE(error_of(line_of(1, 2).replace(0, 1, "-1")).find("value 1 is '-1'"), std::string::npos);
  EXPECT_NE(error_of(line_of(1, 2).replace(0, 1, "1.5")).find("value 1 is '1.5'"), std::string::npos);
  EXPECT_NE(error_of(line_of(1, 2).replace(0, 2, ",")).find("value 1 is ''"), std::string::npos);
  EXPECT_NE(error_of("\n\n").find("d.csv: no images"), std::string::npos);
  EXPECT_NE(error_of(std::string("1\0,2", 4)).find("value 1 is '1?'"), std::string::npos);
}

TEST(Digits, TheShippedFileHoldsTheUciTestSet) {
  const std::string path = gradsync::training::default_digits_path();
  if (path.empty()) GTEST_SKIP() << "no digits data found at configure time (Debian: python3-sklearn)";
  const Digits d = gradsync::training::load_digits(path);
  // UCI's optdigits test set as scikit-learn ships it: 1,797 images, 174-183 of each digit.
  EXPECT_EQ(d.rows(), 1797U);
  for (int c = 0; c < Digits::kClasses; ++c) {
    const auto n = std::count(d.labels.begin(), d.labels.end(), c);
    EXPECT_GE(n, 174) << c;
    EXPECT_LE(n, 183) << c;
  }
  EXPECT_EQ(*std::max_element(d.pixels.begin(), d.pixels.end()), 1.0F);
}

TEST(Digits, AFileThatIsNotTheDataIsRefusedByName) {
  try {
    gradsync::training::load_digits(GRADSYNC_SOURCE "/README.md");
    FAIL() << "README.md read as digits";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("README.md:1: value 1 is"), std::string::npos) << e.what();
  }
  EXPECT_THROW(gradsync::training::load_digits("/nonexistent/digits.csv.gz"), InputError);
  EXPECT_THROW(gradsync::training::load_digits(""), InputError);
}
