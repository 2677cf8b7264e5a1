#include "models/topology/importers/parse_util.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "models/support/error.h"

namespace gradsync::models::importers {

std::string read_text_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(path + ": no such file");
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError(path + ": is a directory; expected a text file holding a tool's output");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot be read");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw InputError(path + ": cannot be read");
  return buffer.str();
}

std::string SourceText::where(std::size_t index) const { return name + ":" + std::to_string(index + 1); }

void SourceText::fail(std::size_t index, const std::string& what) const { throw InputError(where(index) + ": " + what); }

std::string strip_escape_sequences(std::string_view line) {
  constexpr char kEsc = '\x1b';
  if (line.find(kEsc) == std::string_view::npos) return std::string(line);
  std::string out;
  out.reserve(line.size());
  for (std::size_t k = 0; k < line.size();) {
    if (line[k] == kEsc && k + 1 < line.size()) {
      const char kind = line[k + 1];
      if (kind == '[') {
        std::size_t e = k + 2;
        while (e < line.size() && line[e] >= 0x30 && line[e] <= 0x3F) ++e;  // parameters: "4", "1;31", "?25"
        while (e < line.size() && line[e] >= 0x20 && line[e] <= 0x2F) ++e;  // intermediates
        if (e < line.size() && line[e] >= 0x40 && line[e] <= 0x7E) {       // the final byte: "m", "K", "H"
          k = e + 1;
          continue;
        }
      } else if ((kind == '(' || kind == ')') && k + 2 < line.size() && line[k + 2] >= 0x30 && line[k + 2] <= 0x7E) {
        k += 3;
        continue;
      }
    }
    out += line[k++];
  }
  return out;
}

SourceText split_lines(const std::string& text, const std::string& name) {
  SourceText src;
  src.name = name;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = strip_escape_sequences(std::string_view(text).substr(start, end - start));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.size() > kMaxLineLength) {
      throw InputError(name + ":" + std::to_string(src.lines.size() + 1) + ": a line of " + std::to_string(line.size()) +
                       " characters; expected printed text (a tool's output, a log, a listing), whose lines are at most " + std::to_string(kMaxLineLength) +
                       " (is this the file you meant?)");
    }
    src.lines.push_back(std::move(line));
    start = end + 1;
  }
  return src;
}

void check_utf8(const SourceText& src, const std::string& expected) {
  for (std::size_t i = 0; i < src.size(); ++i) {
    const std::string& line = src.lines[i];
    for (std::size_t k = 0; k < line.size();) {
      const auto b = static_cast<unsigned char>(line[k]);
      std::size_t len = b < 0x80 ? 1 : b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
      bool ok = len > 0 && k + len <= line.size();
      for (std::size_t m = 1; ok && m < len; ++m) ok = (static_cast<unsigned char>(line[k + m]) & 0xC0) == 0x80;
      if (ok && len > 2) {  // no overlong forms, surrogates or code points above U+10FFFF
        const auto b1 = static_cast<unsigned char>(line[k + 1]);
        ok = !(b == 0xE0 && b1 < 0xA0) && !(b == 0xED && b1 > 0x9F) && !(b == 0xF0 && b1 < 0x90) && !(b == 0xF4 && b1 > 0x8F);
      }
      if (!ok) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned>(b));
        src.fail(i, std::string("byte ") + hex + " at column " + std::to_string(k + 1) + " is not UTF-8 text; expected " + expected);
      }
      k += len;
    }
  }
}

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\f\v");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\f\v");
  return text.substr(first, last - first + 1);
}

bool is_blank(std::string_view line) { return trim(line).empty(); }

std::vector<std::string> tokens(std::string_view line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) out.emplace_back(line.substr(start, i - start));
  }
  return out;
}

std::string quote_token(std::string_view token) { return "\"" + std::string(token) + "\""; }

std::optional<double> parse_number(std::string_view token) {
  if (token.empty()) return std::nullopt;
  if (token.front() == '+') token.remove_prefix(1);
  double value = 0;
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (ec != std::errc() || end != token.data() + token.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<std::size_t> parse_index(std::string_view token) {
  if (token.empty()) return std::nullopt;
  std::size_t value = 0;
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (ec != std::errc() || end != token.data() + token.size()) return std::nullopt;
  return value;
}

namespace {

std::string label_for(TableLabels labels, std::size_t i) {
  return labels == TableLabels::gpu ? "GPU" + std::to_string(i) : std::to_string(i);
}

bool is_label(std::string_view token, TableLabels labels, std::size_t i) { return token == label_for(labels, i); }

// Index of the first labelled column in a header's tokens (after an optional corner), or npos.
std::size_t first_label(const std::vector<std::string>& t, TableLabels labels, const std::vector<std::string>& corners) {
  if (t.empty()) return std::string::npos;
  if (is_label(t[0], labels, 0)) return 0;
  for (const auto& c : corners) {
    if (t[0] == c && t.size() > 1 && is_label(t[1], labels, 0)) return 1;
  }
  return std::string::npos;
}

std::string line_excerpt(const std::string& line) {
  std::string t(trim(line));
  if (t.size() > 60) t = t.substr(0, 57) + "...";
  return quote_token(t);
}

}  // namespace

bool looks_like_header(std::string_view line, TableLabels labels, const std::vector<std::string>& corners) {
  return first_label(tokens(line), labels, corners) != std::string::npos;
}

Table read_table(const SourceText& src, std::size_t& pos, const TableSpec& spec) {
  Table table;
  table.title = spec.title;
  const std::string in_table = " of the table \"" + spec.title + "\"";
  while (pos < src.size() && is_blank(src.lines[pos])) ++pos;
  if (pos >= src.size()) {
    src.fail(src.size() == 0 ? 0 : src.size() - 1,
             "the file ends before the header" + in_table + "; expected a line of column labels " +
                 label_for(spec.labels, 0) + " " + label_for(spec.labels, 1) + " ...");
  }

  // Header: [corner] label0 label1 ... [tail]
  const auto header = tokens(src.lines[pos]);
  const std::size_t first = first_label(header, spec.labels, spec.corners);
  if (first == std::string::npos) {
    src.fail(pos, line_excerpt(src.lines[pos]) + " is not the header" + in_table + "; expected column labels " +
                      label_for(spec.labels, 0) + " " + label_for(spec.labels, 1) + " ...");
  }
  std::size_t k = first;
  std::size_t columns = 0;
  while (k < header.size() && is_label(header[k], spec.labels, columns)) {
    ++columns;
    ++k;
  }
  if (k < header.size() && !spec.trailing_cells) {
    src.fail(pos, quote_token(header[k]) + " is not a column label" + in_table + "; expected " +
                      label_for(spec.labels, columns) + " or the end of the header line");
  }
  table.header_tail.assign(header.begin() + static_cast<std::ptrdiff_t>(k), header.end());
  if (spec.columns && columns != *spec.columns) {
    src.fail(pos, "the header" + in_table + " lists " + std::to_string(columns) + " columns; expected " +
                      std::to_string(*spec.columns) + (spec.columns_origin.empty() ? "" : " (" + spec.columns_origin + ")"));
  }
  table.columns = columns;
  table.header_line = pos;
  ++pos;

  const std::size_t rows = spec.rows ? spec.rows : columns;
  const std::size_t min_cells = spec.trailing_cells ? std::max(spec.min_row_cells, columns) : columns;
  for (std::size_t r = 0; r < rows; ++r) {
    const std::string expected_row = "expected the row " + label_for(spec.labels, r);
    if (pos >= src.size()) {
      src.fail(src.size() - 1, "the file ends after " + std::to_string(r) + " of " + std::to_string(rows) + " rows" +
                                   in_table + "; " + expected_row);
    }
    auto t = tokens(src.lines[pos]);
    if (t.empty()) {
      src.fail(pos, "the table \"" + spec.title + "\" ends after " + std::to_string(r) + " of " + std::to_string(rows) +
                        " rows; " + expected_row);
    }
    const bool label_ok = is_label(t[0], spec.labels, r);
    if (!label_ok) {
      // A row label, but the wrong one: out of order. Anything else: the table was cut short.
      const bool is_some_label = spec.labels == TableLabels::index
                                     ? parse_index(t[0]).has_value()
                                     : (t[0].rfind("GPU", 0) == 0 && parse_index(std::string_view(t[0]).substr(3)));
      if (is_some_label) {
        src.fail(pos, "row label " + quote_token(t[0]) + " is out of order" + in_table + "; " + expected_row);
      }
      src.fail(pos, line_excerpt(src.lines[pos]) + " ends the table \"" + spec.title + "\" after " + std::to_string(r) +
                        " of " + std::to_string(rows) + " rows; " + expected_row);
    }
    t.erase(t.begin());
    if (t.size() < min_cells || (!spec.trailing_cells && t.size() != columns)) {
      src.fail(pos, "row " + label_for(spec.labels, r) + in_table + " has " + std::to_string(t.size()) +
                        " values; expected " + std::to_string(min_cells) + (min_cells == columns ? " (one per column)" : ""));
    }
    table.row_lines.push_back(pos);
    table.cells.push_back(std::move(t));
    ++pos;
  }
  return table;
}

std::vector<std::vector<std::optional<double>>> table_numbers(const SourceText& src, const Table& table,
                                                              const NumberRules& rules) {
  std::vector<std::vector<std::optional<double>>> out;
  for (std::size_t r = 0; r < table.cells.size(); ++r) {
    std::vector<std::optional<double>> row;
    for (std::size_t c = 0; c < table.columns; ++c) {
      const std::string& cell = table.cells[r][c];
      if (cell == "N/A" && rules.allow_na) {
        row.emplace_back();
        continue;
      }
      const auto v = parse_number(cell);
      if (!v) src.fail(table.row_lines[r], quote_token(cell) + " is not a number; expected " + rules.expected);
      if (*v < 0) src.fail(table.row_lines[r], quote_token(cell) + " is negative; expected " + rules.expected);
      const bool off_diagonal = table.cells.size() == table.columns && r != c;
      if (rules.positive_off_diagonal && off_diagonal && *v <= 0) {
        src.fail(table.row_lines[r], quote_token(cell) + " is not above zero; expected " + rules.expected);
      }
      if (*v > rules.maximum || (*v > 0 && *v < rules.minimum_positive)) {
        src.fail(table.row_lines[r], quote_token(cell) + " is out of range; expected " + rules.expected + " " + rules.bounds);
      }
      row.emplace_back(*v * rules.scale);
    }
    out.push_back(std::move(row));
  }
  return out;
}

SquareNumbers square_numbers(const SourceText& src, const Table& table, const NumberRules& rules) {
  const auto values = table_numbers(src, table, rules);
  const std::size_t n = table.columns;
  SquareNumbers out{PairMatrix(n), std::vector<std::optional<double>>(n)};
  for (std::size_t i = 0; i < n && i < values.size(); ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) {
        out.diagonal[i] = values[i][j];
      } else {
        out.pairs.at(i, j) = values[i][j];
      }
    }
  }
  return out;
}

void ParsedText::found(const std::string& tool) {
  for (const auto& t : tools) {
    if (t == tool) return;
  }
  tools.push_back(tool);
}

}  // namespace gradsync::models::importers
