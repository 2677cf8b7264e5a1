#include "experiments/table.h"

#include <algorithm>


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

}  // namespace gradsync::experiments
