#include "charts/chart_style.hpp"

#include <QAbstractAxis>
#include <QLegend>

#include "parallax/reports/svg.hpp"

namespace parallax::gui {

QColor palette_color(int i) { return QColor(QString::fromLatin1(svg::color(i))); }

void clear_chart(QChart* c) {
  c->removeAllSeries();
  for (QAbstractAxis* a : c->axes()) {
    c->removeAxis(a);
    delete a;
  }
}

QChart* make_chart() {
  auto* c = new QChart;
  c->setMargins(QMargins(4, 4, 4, 4));
  c->legend()->setAlignment(Qt::AlignBottom);
  c->setAnimationOptions(QChart::NoAnimation);
  QFont f = c->titleFont();
  f.setBold(true);
  c->setTitleFont(f);
  return c;
}

}  // namespace parallax::gui
