#include "charts/scaling_chart.hpp"

#include <algorithm>

#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QValueAxis>

#include "charts/chart_style.hpp"

namespace parallax::gui {

ScalingChartView::ScalingChartView(QWidget* parent) : QChartView(make_chart(), parent) {
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(420, 260);
  chart()->setTitle("Scaling over GPU counts (computing...)");
}

void ScalingChartView::show_rows(const std::vector<CapacityRow>& rows, int64_t current_gpus) {
  QChart* c = chart();
  clear_chart(c);
  current_line_ = nullptr;
  current_gpus_ = current_gpus;

  auto* tflops = new QLineSeries;
  tflops->setName("model TFLOP/s per GPU");
  tflops->setPen(QPen(palette_color(0), 2.5));
  tflops->setPointsVisible(true);
  auto* days = new QLineSeries;
  days->setName("days to train");
  days->setPen(QPen(palette_color(1), 2.5));
  days->setPointsVisible(true);
  auto* knee = new QScatterSeries;
  knee->setName("knee: < 80% scaling");
  knee->setColor(palette_color(5));
  knee->setMarkerSize(14);
  double g_min = 1e18, g_max = 0, tf_max = 0, days_max = 0;
  for (const CapacityRow& r : rows) {
    if (!r.best) continue;
    const double g = static_cast<double>(r.gpus);
    const double tf = r.best->prediction.model_tflops_per_gpu * r.best->throughput_scale();
    tflops->append(g, tf);
    days->append(g, r.days);
    if (r.knee) knee->append(g, tf);
    g_min = std::min(g_min, g);
    g_max = std::max(g_max, g);
    tf_max = std::max(tf_max, tf);
    days_max = std::max(days_max, r.days);
  }
  if (tflops->count() == 0) {
    delete tflops;
    delete days;
    delete knee;
    c->setTitle("Scaling: no GPU count of the sweep has a plan that fits");
    return;
  }
  c->addSeries(tflops);
  c->addSeries(days);
  if (knee->count() > 0) {
    c->addSeries(knee);
  } else {
    delete knee;
    knee = nullptr;
  }
  y_max_ = tf_max * 1.15;
  current_line_ = new QLineSeries;
  current_line_->setPen(QPen(QColor("#D55E00"), 2, Qt::DashLine));
  c->addSeries(current_line_);

  auto* x = new QLogValueAxis;
  x->setBase(2);
  x->setLabelFormat("%g");
  x->setRange(g_min / 1.3, g_max * 1.3);
  x->setTitleText("GPUs (log2)");
  auto* y = new QValueAxis;
  y->setRange(0, y_max_);
  y->applyNiceNumbers();
  y_max_ = y->max();
  y->setLabelFormat("%.0f");
  y->setTitleText("TFLOP/s per GPU");
  auto* y_days = new QValueAxis;
  y_days->setRange(0, days_max * 1.15);
  y_days->applyNiceNumbers();
  y_days->setLabelFormat("%.0f");
  y_days->setTitleText("days");
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);
  c->addAxis(y_days, Qt::AlignRight);
  for (QAbstractSeries* s : {static_cast<QAbstractSeries*>(tflops), static_cast<QAbstractSeries*>(knee),
                             static_cast<QAbstractSeries*>(current_line_)}) {
    if (!s) continue;
    s->attachAxis(x);
    s->attachAxis(y);
  }
  days->attachAxis(x);
  days->attachAxis(y_days);
  place_current_line();
  c->setTitle("Scaling over GPU counts: best plan per count");
}

void ScalingChartView::set_current(int64_t gpus) {
  current_gpus_ = gpus;
  place_current_line();
}

void ScalingChartView::place_current_line() {
  if (!current_line_) return;
  const double g = static_cast<double>(current_gpus_);
  current_line_->clear();
  current_line_->append(g, 0);
  current_line_->append(g, y_max_);
  current_line_->setName(QString("current: %1 GPUs").arg(current_gpus_));
}

}  // namespace parallax::gui
