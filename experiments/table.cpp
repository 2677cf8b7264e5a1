#include "experiments/table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "models/error.h"
#include "models/units.h"

namespace gradsync::experiments {

Table::Table(std::vector<std::string> headers) {
  for (auto& h : headers) {
    const bool right = !h.empty() && h[0] == '>';
    right_.push_back(right);
    headers_.push_back(right ? h.substr(1) : h);
  }
}

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
  note_.push_back(false);
}

void Table::add_note_row(std::string text) {
  rows_.push_back({std::move(text)});
  note_.push_back(true);
}

std::string Table::render() const {
  std::vector<std::size_t> width(headers_.size());
  for (std::size_t c = 0; c < headers_.size(); ++c) width[c] = headers_[c].size();
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    if (note_[r]) continue;
    for (std::size_t c = 0; c < headers_.size(); ++c) width[c] = std::max(width[c], rows_[r][c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t c = 0; c < headers_.size(); ++c) {
      const std::string& cell = cells[c];
      const std::string pad(width[c] - cell.size(), ' ');
      out += right_[c] ? pad + cell : cell + pad;
      if (c + 1 < headers_.size()) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(headers_);
  std::size_t total = 0;
  for (std::size_t w : width) total += w + 2;
  out += std::string(total > 2 ? total - 2 : 0, '-') + "\n";
  for (std::size_t r = 0; r < rows_.size(); ++r) out += note_[r] ? "  " + rows_[r][0] + "\n" : line(rows_[r]);
  return out;
}

std::string format_fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string format_seconds(double s) {
  if (s == 0) return "0";
  const double a = std::fabs(s);
  char buf[64];
  if (a < 1e-3) std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  else if (a < 1) std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  else if (a < 100) std::snprintf(buf, sizeof buf, "%.3f s", s);
  else std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

std::string format_bytes(double bytes) {
  char buf[96];
  if (bytes < 1e3) std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  else if (bytes < 1e6) std::snprintf(buf, sizeof buf, "%.1f kB", bytes / 1e3);
  else if (bytes < 1e9) std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
  else std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
  return buf;
}

double parse_size(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  std::string suffix(end ? end : "");
  double scale = 0;
  if (suffix.empty() || suffix == "B") scale = 1;
  else if (suffix == "kB" || suffix == "KB") scale = 1e3;
  else if (suffix == "MB") scale = 1e6;
  else if (suffix == "GB") scale = 1e9;
  else if (suffix == "KiB") scale = 1024.0;
  else if (suffix == "MiB") scale = 1024.0 * 1024;
  else if (suffix == "GiB") scale = 1024.0 * 1024 * 1024;
  if (text.empty() || end == text.c_str() || scale == 0 || !std::isfinite(v) || v < 0) {
    throw models::InputError(what + " \"" + text +
                             "\": expected a size in bytes, optionally with a unit: B, kB, MB, GB, KiB, MiB, GiB (e.g. 64MiB)");
  }
  const double bytes = v * scale;
  if (bytes > models::kMaxBytes) {
    throw models::InputError(what + " \"" + text + "\": expected a size of at most 1 PiB (1125899906842624 bytes)");
  }
  // Whole bytes ("1.5KiB" is 1536 bytes; "1.5" is not a size).
  const double whole = std::round(bytes);
  if (std::fabs(bytes - whole) > 1e-6 * std::max(1.0, bytes)) {
    throw models::InputError(what + " \"" + text + "\": " + format_fixed(bytes, 3) + " bytes; expected a whole number of bytes");
  }
  return whole;
}

}  // namespace gradsync::experiments
