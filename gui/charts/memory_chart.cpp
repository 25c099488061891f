#include "charts/memory_chart.hpp"

#include <QBarSet>
#include <QLineSeries>
#include <QStackedBarSeries>
#include <QValueAxis>

#include "charts/chart_style.hpp"

namespace parallax::gui {

MemoryChartView::MemoryChartView(QWidget* parent) : QChartView(make_chart(), parent) {
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(420, 260);
  chart()->setTitle("Memory per GPU by pipeline stage");
}

void MemoryChartView::show_plan(const Prediction& pr, const QString& title) {
  QChart* c = chart();
  clear_chart(c);
  const char* names[] = {"weights", "grads", "optimizer", "activations", "buffers"};
  QBarSet* sets[5];
  for (int k = 0; k < 5; ++k) {
    sets[k] = new QBarSet(names[k]);
    sets[k]->setColor(palette_color(k));
    sets[k]->setBorderColor(palette_color(k));
  }
  for (size_t i = 0; i < pr.memory.size(); ++i) {
    const StageMemory& m = pr.memory[i];
    const double gb[] = {m.weights_bytes, m.grads_bytes, m.optimizer_bytes, m.activations_bytes,
                         m.buffers_bytes};
    for (int k = 0; k < 5; ++k) sets[k]->append(gb[k] / 1e9);
  }
  auto* bars = new QStackedBarSeries;
  for (QBarSet* s : sets) bars->append(s);
  bars->setBarWidth(0.8);
  c->addSeries(bars);

  const double n = static_cast<double>(pr.memory.size());
  const double cap_gb = pr.capacity_bytes / 1e9;
  const double usable_gb = (pr.capacity_bytes - pr.reserve_bytes) / 1e9;
  auto* cap = new QLineSeries;
  cap->setName("capacity");
  cap->append(-0.5, cap_gb);
  cap->append(n - 0.5, cap_gb);
  cap->setPen(QPen(Qt::black, 2));
  auto* usable = new QLineSeries;
  usable->setName("usable (- reserve)");
  usable->append(-0.5, usable_gb);
  usable->append(n - 0.5, usable_gb);
  usable->setPen(QPen(QColor("#D55E00"), 2, Qt::DashLine));
  c->addSeries(cap);
  c->addSeries(usable);

  // A value axis rather than a category axis: with 35 or 105 stages, a label on every stage
  // would not fit; ticks every 1, 2, 5, 10... stages do.
  auto* x = new QValueAxis;
  x->setRange(-0.5, n - 0.5);
  x->setTickType(QValueAxis::TicksDynamic);
  x->setTickAnchor(0);
  x->setTickInterval(n <= 12 ? 1 : n <= 24 ? 2 : n <= 60 ? 5 : 10);
  x->setLabelFormat("%d");
  x->setGridLineVisible(false);
  x->setTitleText("pipeline stage");
  auto* y = new QValueAxis;
  y->setRange(0, cap_gb * 1.08);
  y->applyNiceNumbers();
  y->setLabelFormat("%.0f");
  y->setTitleText("GB per GPU");
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);
  for (QAbstractSeries* s : c->series()) {
    s->attachAxis(x);
    s->attachAxis(y);
  }
  c->setTitle(title);
}

}  // namespace parallax::gui
