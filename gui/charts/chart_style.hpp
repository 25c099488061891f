#pragma once
// What the GUI's charts share: the report's categorical palette (so a colour means the same part
// in the GUI and in the HTML report) and emptying a chart before it is redrawn.
#include <QChart>
#include <QColor>

namespace parallax::gui {

// Okabe-Ito colour i, as the report's SVG charts use it.
QColor palette_color(int i);

// Removes every series and axis of `c` (they are owned by the chart and deleted).
void clear_chart(QChart* c);

// A chart with the GUI's common look: small margins, legend at the bottom, no animation.
QChart* make_chart();

}  // namespace parallax::gui
