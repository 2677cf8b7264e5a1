// Fuzz entries for the training data gradsync-train reads (issue 52): the digits' CSV and plain
// text for the language model. Contract: fuzz/entries.h.
#include <cmath>
#include <cstdint>
#include <string>

#include "fuzz/entries.h"
#include "fuzz/support.h"
#include "training/digits.h"
#include "training/text.h"

namespace gradsync::fuzz {

Outcome fuzz_digits_csv(const std::uint8_t* data, std::size_t size) {
  const std::string text = text_of(data, size);
  const char* t = "digits_csv";
  return guarded(t, [&] {
    const training::Digits d = training::parse_digits_csv(text, "fuzz.csv");
    if (d.rows() == 0 || d.pixels.size() != d.rows() * training::Digits::kPixels) violated(t, "pixels do not fill the rows");
    std::string again;
    for (std::size_t r = 0; r < d.rows(); ++r) {
      for (int i = 0; i < training::Digits::kPixels; ++i) {
        const float v = d.pixels[r * training::Digits::kPixels + static_cast<std::size_t>(i)] * 16.0F;
        if (!(v >= 0 && v <= 16 && v == std::floor(v))) violated(t, "a pixel of " + exact_number(v) + " sixteenths");
        again += std::to_string(static_cast<int>(v)) + ",";
      }
      if (d.labels[r] < 0 || d.labels[r] >= training::Digits::kClasses) violated(t, "a digit " + std::to_string(d.labels[r]));
      again += std::to_string(d.labels[r]) + "\n";
    }
    // The data written back as CSV reads as the same data.
    const training::Digits back = training::parse_digits_csv(again, "again.csv");
    if (back.pixels != d.pixels || back.labels != d.labels) violated(t, "the data changed in a round trip through CSV");
  });
}

Outcome fuzz_text(const std::uint8_t* data, std::size_t size) {
  const std::string text = text_of(data, size);
  const char* t = "text";
  return guarded(t, [&] {
    const training::Text words = training::parse_text(text, "fuzz.txt");
    if (words.words.empty() || words.words.back() != "</s>") violated(t, "the text does not end a sentence");
    std::string again;
    for (std::size_t i = 0; i < words.words.size(); ++i) {
      const std::string& w = words.words[i];
      if (w == "</s>") {
        if (i == 0 || words.words[i - 1] == "</s>") violated(t, "a sentence end without a word before it");
        again += ". ";
        continue;
      }
      if (w.empty() || w.front() == '\'' || w.back() == '\'') violated(t, "a word '" + w + "' empty or at an apostrophe");
      for (char c : w) {
        if (!((c >= 'a' && c <= 'z') || c == '\'')) violated(t, "a word '" + w + "' holding other than a-z and apostrophes");
      }
      again += w + " ";
    }
    // The words written back as text read as the same words.
    if (training::parse_text(again, "again.txt").words != words.words) violated(t, "the words changed in a round trip through text");
    const int context = 1 + static_cast<int>(size % 5);
    const int vocabulary = 1 + static_cast<int>(size % 50);
    if (words.words.size() <= static_cast<std::size_t>(context)) return;
    const training::Ngrams g = training::make_ngrams(words, vocabulary, context);
    if (g.rows() != words.words.size() - static_cast<std::size_t>(context)) violated(t, "not a row for each word after the first context");
    if (g.inputs.size() != g.rows() * static_cast<std::size_t>(context)) violated(t, "the inputs do not fill the rows");
    const auto ids = static_cast<int>(g.vocabulary.size());
    if (ids > vocabulary + 2) violated(t, "more words kept than the vocabulary");
    for (float v : g.inputs) {
      if (!(v >= 0 && v < static_cast<float>(ids) && v == std::floor(v))) violated(t, "an input id " + exact_number(v));
    }
    for (int v : g.next) {
      if (v < 0 || v >= ids) violated(t, "a next word id " + std::to_string(v));
    }
  });
}

}  // namespace gradsync::fuzz
