// The text reader of the language model (training/text.h): words as runs of letters, lower
// case, apostrophes kept inside words, sentence ends as words; a folder read in its files'
// natural order; the vocabulary by frequency; a row per word with its context; bad text refused
// with its file and byte.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "models/support/error.h"
#include "training/text.h"

using gradsync::models::InputError;
using gradsync::training::load_text;
using gradsync::training::make_ngrams;
using gradsync::training::Ngrams;
using gradsync::training::parse_text;

namespace {

std::string text_error_of(const std::string& text) {
  try {
    parse_text(text, "t.txt");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Text, WordsAreRunsOfLettersInLowerCaseAndSentenceEndsAreWords) {
  const auto t = parse_text("Call me Ishmael. Some years ago\xE2\x80\x94never mind how long!  Don't, whale\xE2\x80\x99s 42 'tis", "t.txt");
  const std::vector<std::string> expected = {"call", "me",    "ishmael", "</s>",    "some",  "years", "ago", "never", "mind",
                                             "how",  "long", "</s>",    "don't", "whale's", "tis", "</s>"};
  EXPECT_EQ(t.words, expected);
  // Marks in a row make one sentence end; a text without a final mark still ends one.
  EXPECT_EQ(parse_text("Ahoy?! ... Ahoy", "t.txt").words, (std::vector<std::string>{"ahoy", "</s>", "ahoy", "</s>"}));
}

TEST(Text, WhatIsNotTextIsRefusedWithItsFileAndByte) {
  EXPECT_EQ(text_error_of(std::string("ab\0c", 4)), "t.txt: a NUL byte at byte 3; expected plain text (a book, one file or a folder of .txt files)");
  EXPECT_EQ(text_error_of("1851 -- ... !"), "t.txt: no words; expected text (runs of letters)");
  EXPECT_EQ(text_error_of(""), "t.txt: no words; expected text (runs of letters)");
}

TEST(Text, AFolderIsItsTxtFilesInNaturalOrder) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "text-folder";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::vector<std::pair<std::string, std::string>> files = {
      {"chapter_10.txt", "ten"}, {"chapter_2.txt", "two"}, {"chapter_1.txt", "one"}, {"notes.md", "skipped"}};
  for (const auto& [name, text] : files) std::ofstream(dir / name) << text;
  const auto t = load_text(dir.string());
  EXPECT_EQ(t.words, (std::vector<std::string>{"one", "</s>", "two", "</s>", "ten", "</s>"}));
  ASSERT_EQ(t.sources.size(), 3U);
  EXPECT_EQ(fs::path(t.sources.back()).filename(), "chapter_10.txt");
  fs::remove_all(dir / "chapter_1.txt");
  fs::remove_all(dir / "chapter_2.txt");
  fs::remove_all(dir / "chapter_10.txt");
  try {
    load_text(dir.string());
    ADD_FAILURE() << "a folder without .txt files read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no .txt files in the folder"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_text((dir / "missing.txt").string()), InputError);
}

TEST(Text, RowsAreEachWordAfterItsContextWithTheMostFrequentWordsKept) {
  const auto t = parse_text("the whale. the sea. a whale", "t.txt");
  // Words: the whale </s> the sea </s> a whale </s>; counts: the 2, whale 2, a 1, sea 1.
  const Ngrams g = make_ngrams(t, 3, 2);
  EXPECT_EQ(g.vocabulary, (std::vector<std::string>{"<unk>", "</s>", "the", "whale", "a"}));
  EXPECT_EQ(g.context, 2);
  ASSERT_EQ(g.rows(), 7U);  // nine words, a row for each after the first two
  // "the whale" -> </s>; "sea </s>" -> a, with sea unknown (not among the 3 kept).
  EXPECT_EQ(std::vector<float>(g.inputs.begin(), g.inputs.begin() + 2), (std::vector<float>{2, 3}));
  EXPECT_EQ(g.next[0], Ngrams::kSentenceEnd);
  EXPECT_EQ(std::vector<float>(g.inputs.begin() + 8, g.inputs.begin() + 10), (std::vector<float>{0, 1}));
  EXPECT_EQ(g.next[4], 4);
  EXPECT_EQ(g.unknown_rows, 1U);  // "the" -> sea
  EXPECT_THROW(make_ngrams(t, 0, 2), InputError);
  EXPECT_THROW(make_ngrams(t, 3, 0), InputError);
  try {
    make_ngrams(t, 3, 9);
    ADD_FAILURE() << "a context as long as the text made rows";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "t.txt: 9 words (sentence ends included); expected more than the 9 of one row's context");
  }
}

TEST(Text, TheShippedChaptersAndTheInstalledBookRead) {
  const auto t = load_text(GRADSYNC_SOURCE "/tests/data/text/moby-dick-chapter-1.txt");
  ASSERT_GT(t.words.size(), 2000U);
  EXPECT_EQ(std::vector<std::string>(t.words.begin(), t.words.begin() + 6),
            (std::vector<std::string>{"chapter", "</s>", "loomings", "</s>", "call", "me"}));
  const std::string book = gradsync::training::default_text_path();
  if (book.empty()) GTEST_SKIP() << "configure found no installed text (scripts/setup.sh installs Moby-Dick)";
  const auto whole = load_text(book);
  EXPECT_GT(whole.words.size(), 200000U);
  EXPECT_GT(whole.sources.size(), 100U);
  const Ngrams g = make_ngrams(whole, 2000, 4);
  EXPECT_EQ(g.vocabulary[2], "the");
  EXPECT_LT(g.unknown_rows, g.rows() / 4);
}
