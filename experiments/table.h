// Plain-text tables with aligned columns, and human-readable figures.
#pragma once

#include <string>
#include <vector>

#include "models/support/format.h"

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

// The figures in tables are models' formatting (models/support/format.h).
using models::format_bytes;
using models::format_fixed;
using models::format_seconds;

}  // namespace gradsync::experiments
