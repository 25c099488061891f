#include "parallax/reports/svg.hpp"

#include <cstdio>

namespace parallax::svg {

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string number(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

std::string rect(double x, double y, double w, double h, const std::string& fill,
                 const std::string& title) {
  std::string s = "<rect x=\"" + number(x) + "\" y=\"" + number(y) + "\" width=\"" + number(w) +
                  "\" height=\"" + number(h) + "\" fill=\"" + fill + "\"";
  if (title.empty()) return s + "/>";
  return s + "><title>" + escape(title) + "</title></rect>";
}

std::string line(double x1, double y1, double x2, double y2, const std::string& stroke,
                 double width, const std::string& dash) {
  return "<line x1=\"" + number(x1) + "\" y1=\"" + number(y1) + "\" x2=\"" + number(x2) +
         "\" y2=\"" + number(y2) + "\" stroke=\"" + stroke + "\" stroke-width=\"" +
         number(width) + "\"" + (dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"") + "/>";
}

std::string text(double x, double y, const std::string& s, int size, const std::string& anchor,
                 const std::string& extra) {
  return "<text x=\"" + number(x) + "\" y=\"" + number(y) + "\" font-size=\"" +
         std::to_string(size) + "\" text-anchor=\"" + anchor + "\"" +
         (extra.empty() ? "" : " " + extra) + ">" + escape(s) + "</text>";
}

std::string polyline(const std::string& points, const std::string& stroke, double width) {
  return "<polyline points=\"" + points + "\" fill=\"none\" stroke=\"" + stroke +
         "\" stroke-width=\"" + number(width) + "\"/>";
}

std::string polygon(const std::string& points, const std::string& fill, double opacity,
                    const std::string& cls, const std::string& title) {
  return "<polygon class=\"" + cls + "\" points=\"" + points + "\" fill=\"" + fill + "\" fill-opacity=\"" +
         number(opacity, 2) + "\" stroke=\"none\"><title>" + escape(title) + "</title></polygon>";
}

std::string circle(double x, double y, double r, const std::string& fill,
                   const std::string& title) {
  std::string s = "<circle cx=\"" + number(x) + "\" cy=\"" + number(y) + "\" r=\"" + number(r) +
                  "\" fill=\"" + fill + "\"";
  if (title.empty()) return s + "/>";
  return s + "><title>" + escape(title) + "</title></circle>";
}

std::string open(double w, double h, const std::string& id, const std::string& label) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"" + id + "\" class=\"chart\" width=\"" +
         number(w, 0) + "\" height=\"" + number(h, 0) + "\" viewBox=\"0 0 " + number(w, 0) + " " +
         number(h, 0) + "\" role=\"img\" aria-label=\"" + escape(label) +
         "\" font-family=\"sans-serif\">";
}

std::string close() { return "</svg>"; }

const char* color(int i) {
  static const char* const palette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                        "#56B4E9", "#D55E00", "#F0E442", "#999999"};
  return palette[((i % 8) + 8) % 8];
}

}  // namespace parallax::svg
