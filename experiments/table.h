// Plain-text tables with aligned columns, and human-readable figures.
#pragma once

#include <string>
#include <vector>

namespace gradsync::experiments {

class Table {
 public:
  // Columns whose header starts with '>' are right-aligned (the '>' is not printed).
  explicit Table(std::vector<std::string> headers);
  void add_row(std::vector<std::string> cells);
  // A full-width line under the last row (e.g. why a row was skipped).
  void add_note_row(std::string text);
  std::string render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;  // a row with one cell and note flag is a note
  std::vector<bool> note_;
};

std::string format_seconds(double seconds);  // "12.3 us", "4.56 ms", "1.23 s", "1242.6 s"
std::string format_bytes(double bytes);  // "418.7 MB (399.3 MiB)"
std::string format_fixed(double value, int decimals);

// "64MiB", "1e6", "2GB", "512" -> bytes. Throws InputError naming `what`.
double parse_size(const std::string& text, const std::string& what);

}  // namespace gradsync::experiments
