#pragma once
// A minimal SVG writer for the report's charts: elements are appended as text; coordinates are in
// pixels. Every chart says what its axes measure and in which unit.
#include <string>

namespace parallax::svg {

std::string escape(const std::string& text);
std::string rect(double x, double y, double w, double h, const std::string& fill,
                 const std::string& title = "");
std::string line(double x1, double y1, double x2, double y2, const std::string& stroke,
                 double width = 1, const std::string& dash = "");
std::string text(double x, double y, const std::string& s, int size = 11,
                 const std::string& anchor = "start", const std::string& extra = "");
std::string polyline(const std::string& points, const std::string& stroke, double width = 2);
// A filled shape without a stroke (an interval's band) of class `cls`, with a tooltip.
std::string polygon(const std::string& points, const std::string& fill, double opacity,
                    const std::string& cls, const std::string& title);
std::string circle(double x, double y, double r, const std::string& fill,
                   const std::string& title = "");
std::string open(double w, double h, const std::string& id, const std::string& label);
std::string close();
std::string number(double v, int precision = 1);

// Categorical palette shared by all charts (colour-blind friendly, Okabe-Ito).
const char* color(int i);

}  // namespace parallax::svg
