// cli/output_table.hpp — aligned text tables for people (scripts use --json).
//
// Thread-safety: a Table is a plain value.
#pragma once

#include <string>
#include <vector>

namespace readpast::cli {

class Table {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    std::string title;
    Align align = Align::kLeft;
  };

  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

  // REQUIRES: one cell per column. Cells must be printable already (see job_text.hpp).
  void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  bool empty() const noexcept { return rows_.empty(); }

  // The header and the rows, columns two spaces apart, widths counted in characters
  // (UTF-8 code points); no trailing spaces.
  std::string render() const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// Characters (UTF-8 code points) in `text`.
std::size_t display_width(const std::string& text);

}  // namespace readpast::cli
