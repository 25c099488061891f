#include "text_table.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace parallax::cli {

TextTable::TextTable(std::vector<std::string> header) { rows_.push_back(std::move(header)); }

void TextTable::add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

std::string TextTable::str() const {
  std::vector<size_t> width;
  for (const auto& r : rows_) {
    width.resize(std::max(width.size(), r.size()), 0);
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::ostringstream out;
  for (size_t ri = 0; ri < rows_.size(); ++ri) {
    const auto& r = rows_[ri];
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      const std::string pad(width[i] - r[i].size(), ' ');
      // First column left-aligned (labels), the rest right-aligned (numbers).
      line += (i == 0 ? r[i] + pad : pad + r[i]) + (i + 1 < r.size() ? "  " : "");
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
    if (ri == 0) {
      size_t total = 0;
      for (size_t w : width) total += w + 2;
      out << std::string(total > 2 ? total - 2 : total, '-') << '\n';
    }
  }
  return out.str();
}

std::string fmt(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

std::string fmt_gb(double bytes) { return fmt(bytes / 1e9, 2) + " GB"; }

std::string fmt_seconds(double s) {
  if (s >= 1) return fmt(s, 2) + " s";
  if (s >= 1e-3) return fmt(s * 1e3, 2) + " ms";
  return fmt(s * 1e6, 1) + " us";
}

std::string fmt_pct(double fraction) { return fmt(fraction * 100, 1) + "%"; }

}  // namespace parallax::cli
