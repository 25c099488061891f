#include "charts/time_chart.hpp"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QHorizontalStackedBarSeries>
#include <QValueAxis>

#include "charts/chart_style.hpp"

namespace parallax::gui {

TimeChartView::TimeChartView(QWidget* parent) : QChartView(make_chart(), parent) {
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(420, 210);
  chart()->setTitle("Time per iteration");
}

void TimeChartView::show_plan(const Prediction& pr, const QString& title) {
  QChart* c = chart();
  clear_chart(c);
  const std::vector<std::pair<const char*, double>> parts = chart_time_parts(pr.time);
  auto* bars = new QHorizontalStackedBarSeries;
  int k = 0;
  for (const auto& [name, seconds] : parts) {
    auto* set = new QBarSet(QString("%1 %2 s").arg(name).arg(seconds, 0, 'f', 2));
    set->append(seconds);
    set->setColor(palette_color(k));
    set->setBorderColor(palette_color(k));
    bars->append(set);
    ++k;
  }
  bars->setBarWidth(0.7);
  c->addSeries(bars);
  auto* y = new QBarCategoryAxis;
  y->append(QStringList{"iteration"});
  y->setLabelsVisible(false);
  auto* x = new QValueAxis;
  x->setRange(0, pr.iteration_time_s);
  x->applyNiceNumbers();
  x->setLabelFormat("%g");
  x->setTitleText("seconds per iteration");
  c->addAxis(y, Qt::AlignLeft);
  c->addAxis(x, Qt::AlignBottom);
  bars->attachAxis(x);
  bars->attachAxis(y);
  c->setTitle(title);
}

}  // namespace parallax::gui
