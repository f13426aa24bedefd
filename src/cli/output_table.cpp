#include "cli/output_table.hpp"

#include <algorithm>

namespace readpast::cli {

std::size_t display_width(const std::string& text) {
  // Every byte that is not a UTF-8 continuation byte starts a character.
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::string Table::render() const {
  std::vector<std::size_t> widths;
  for (const auto& column : columns_) widths.push_back(display_width(column.title));
  for (const auto& row : rows_) {
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], display_width(row[i]));
    }
  }
  std::string out;
  auto emit = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (std::size_t i = 0; i < columns_.size(); ++i) {
      const std::string& cell = i < cells.size() ? cells[i] : std::string();
      std::size_t pad = widths[i] - std::min(widths[i], display_width(cell));
      if (i > 0) line += "  ";
      if (columns_[i].align == Align::kRight) line.append(pad, ' ');
      line += cell;
      if (columns_[i].align == Align::kLeft) line.append(pad, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  };
  std::vector<std::string> titles;
  for (const auto& column : columns_) titles.push_back(column.title);
  emit(titles);
  for (const auto& row : rows_) emit(row);
  return out;
}

}  // namespace readpast::cli
