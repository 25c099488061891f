#pragma once
// A plain-text table with right-aligned numeric columns, and unit formatting for humans.
#include <string>
#include <vector>

namespace parallax::cli {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header);
  void add_row(std::vector<std::string> row);
  std::string str() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string fmt(double v, int precision);
std::string fmt_gb(double bytes);       // "37.12 GB" (10^9 bytes)
std::string fmt_seconds(double s);      // "60.10 s", "12.3 ms"
std::string fmt_pct(double fraction);   // 0.123 -> "12.3%"

}  // namespace parallax::cli
