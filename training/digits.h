// The training data gradsync trains on for real: the UCI handwritten digits (E. Alpaydin and
// C. Kaynak, 1998; the 1,797 images of its test set, each 8 x 8 pixels of 0..16, and the digit),
// as scikit-learn ships them (sklearn/datasets/data/digits.csv.gz, BSD-3-Clause in Debian's
// python3-sklearn; UCI's licence for the set is CC BY 4.0). scripts/setup.sh installs the package;
// configure finds the file.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gradsync::training {

struct Digits {
  static constexpr int kPixels = 64;
  static constexpr int kClasses = 10;
  std::vector<float> pixels;  // rows x kPixels, scaled to 0..1
  std::vector<int> labels;    // 0..9
  std::size_t rows() const { return labels.size(); }
};

// One image a line: 64 pixels (integers 0..16) and the digit (0..9), separated by commas; a
// bad line throws models::InputError naming `source`, the line, the value and what was expected.
Digits parse_digits_csv(std::string_view text, const std::string& source);

// The file as shipped (gzip-compressed, or plain text).
Digits load_digits(const std::string& path);

// The file configure found (scikit-learn's copy), or "" where it found none.
std::string default_digits_path();

}  // namespace gradsync::training
