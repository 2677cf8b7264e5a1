#include "training/digits.h"

#include <zlib.h>

#include <charconv>
#include <memory>

#include "gradsync/config.h"
#include "models/support/error.h"

namespace gradsync::training {

namespace {

std::string quoted(std::string_view s) {
  constexpr std::size_t kMost = 40;
  std::string out = "'";
  for (char c : s.substr(0, kMost)) out += (static_cast<unsigned char>(c) < 32 || c == 127) ? '?' : c;
  return out + (s.size() > kMost ? "...'" : "'");
}

}  // namespace

Digits parse_digits_csv(std::string_view text, const std::string& source) {
  Digits d;
  std::size_t line_no = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const std::string where = source + ":" + std::to_string(line_no);
    int field = 0;
    std::size_t at = 0;
    while (true) {
      const std::size_t comma = line.find(',', at);
      const std::string_view cell = line.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
      const bool label = field == Digits::kPixels;
      if (field > Digits::kPixels) {
        throw models::InputError(where + ": more than " + std::to_string(Digits::kPixels + 1) +
                                 " values; expected 64 pixels (0..16) and the digit (0..9), separated by commas");
      }
      int v = -1;
      const auto [ptr, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
      const int most = label ? Digits::kClasses - 1 : 16;
      if (ec != std::errc() || ptr != cell.data() + cell.size() || v < 0 || v > most) {
        throw models::InputError(where + ": value " + std::to_string(field + 1) + " is " + quoted(cell) + "; expected " +
                                 (label ? "the digit, an integer 0..9" : "a pixel, an integer 0..16"));
      }
      if (label) {
        d.labels.push_back(v);
      } else {
        d.pixels.push_back(static_cast<float>(v) / 16.0F);
      }
      ++field;
      if (comma == std::string_view::npos) break;
      at = comma + 1;
    }
    if (field != Digits::kPixels + 1) {
      throw models::InputError(where + ": " + std::to_string(field) + " values; expected 64 pixels (0..16) and the digit (0..9)");
    }
  }
  if (d.rows() == 0) throw models::InputError(source + ": no images; expected a line for each: 64 pixels and the digit");
  return d;
}

Digits load_digits(const std::string& path) {
  if (path.empty()) {
    throw models::InputError("the digits data: no file found when gradsync was configured (Debian's python3-sklearn ships it: "
                             "apt-get install python3-sklearn, then configure again) and none given (--data FILE)");
  }
  // gzread reads plain files as they are, too.
  std::unique_ptr<gzFile_s, int (*)(gzFile)> in(gzopen(path.c_str(), "rb"), gzclose);
  if (!in) throw models::InputError(path + ": cannot open the digits data");
  std::string text;
  char buffer[1 << 16];
  while (true) {
    const int n = gzread(in.get(), buffer, sizeof buffer);
    if (n < 0) throw models::InputError(path + ": not readable as gzip or text (zlib: " + gzerror(in.get(), nullptr) + ")");
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > (std::size_t{64} << 20)) throw models::InputError(path + ": over 64 MiB of text; the digits data is about 0.2 MiB");
  }
  return parse_digits_csv(text, path);
}

std::string default_digits_path() { return GRADSYNC_DIGITS_CSV; }

}  // namespace gradsync::training
