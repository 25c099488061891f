#include "charts/scaling_chart.hpp"

#include <algorithm>
#include <cmath>

#include <QCategoryAxis>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QValueAxis>

#include "charts/chart_style.hpp"

namespace parallax::gui {

QString scaling_assumptions_text(const std::vector<CapacityRow>& rows, int64_t current_gpus,
                                 const ScalingAssumptions& a) {
  const QString tokens = QString::number(a.tokens / 1e12, 'f', 1) + "T tokens";
  QString s = a.tokens_assumed ? "Days: " + tokens + " = " + QString::number(kDefaultTokensPerParam) +
                                     " tokens/parameter (Chinchilla, Hoffmann et al. 2022; no tokens given)."
                               : "Days: for " + tokens + " (given).";
  QString cost = QString::fromUtf8("— (no price given)");
  if (price_known(a.price_per_gpu_hour_usd)) {
    cost = "no plan";
    for (const CapacityRow& r : rows) {
      if (r.gpus == current_gpus && r.best) cost = "USD " + QString::number(r.cost_usd, 'f', 0);
    }
    cost += " at USD " + QString::number(a.price_per_gpu_hour_usd, 'f', 2) + " per GPU-hour";
  }
  return s + "\nCost at " + QString::number(current_gpus) + " GPUs: " + cost + ".";
}

namespace {

// The days axis on the right: log10(days) labelled at 1, 2 and 5 of each decade when log_scale,
// else linear from 0.
QAbstractAxis* days_value_axis(bool log_scale, double days_min, double days_max) {
  if (log_scale) {
    // QLogValueAxis labels only the decades; a category axis over log10(days) labels 1, 2, 5.
    auto* cat = new QCategoryAxis;
    cat->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
    const double lo = std::floor(std::log10(days_min)), hi = std::ceil(std::log10(days_max));
    for (double e = lo; e <= hi; ++e) {
      for (double m : {1.0, 2.0, 5.0}) {
        if (e == hi && m > 1) break;
        const double v = m * std::pow(10, e);
        cat->append(QString::number(v, 'g', 6), std::log10(v));
      }
    }
    cat->setRange(lo, hi);
    cat->setTitleText("days (log scale)");
    return cat;
  }
  auto* lin = new QValueAxis;
  lin->setRange(0, days_max * 1.15);
  lin->applyNiceNumbers();
  lin->setLabelFormat("%.0f");
  lin->setTitleText("days");
  return lin;
}

// A line series of the curve with its points shown.
QLineSeries* curve_series(const QString& name, const QColor& color) {
  auto* series = new QLineSeries;
  series->setName(name);
  series->setPen(QPen(color, 2.5));
  series->setPointsVisible(true);
  return series;
}

}  // namespace

ScalingChartView::ScalingChartView(QWidget* parent) : QChartView(make_chart(), parent) {
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(420, 260);
  chart()->setTitle("Scaling over GPU counts (computing...)");
}

void ScalingChartView::show_rows(const std::vector<CapacityRow>& rows, int64_t current_gpus,
                                 const ScalingAssumptions& assumptions) {
  QChart* c = chart();
  clear_chart(c);
  current_line_ = nullptr;
  current_gpus_ = current_gpus;

  QLineSeries* tflops = curve_series("model TFLOP/s per GPU", palette_color(0));
  QLineSeries* days = curve_series("days to train", palette_color(1));
  auto* knee = new QScatterSeries;
  knee->setName("knee: < 80% scaling");
  knee->setColor(palette_color(5));
  knee->setMarkerSize(14);
  double g_min = 1e18, g_max = 0, tf_max = 0, days_max = 0, days_min = 1e300;
  for (const CapacityRow& r : rows) {
    if (r.best && r.days > 0) days_min = std::min(days_min, r.days), days_max = std::max(days_max, r.days);
  }
  days_log_ = days_max / days_min > 10;  // more than a decade: log10 (plotted as log10 days)
  for (const CapacityRow& r : rows) {
    if (!r.best) continue;
    const double g = static_cast<double>(r.gpus);
    const double tf = r.best->prediction.model_tflops_per_gpu * r.best->throughput_scale();
    tflops->append(g, tf);
    days->append(g, days_log_ ? std::log10(r.days) : r.days);
    if (r.knee) knee->append(g, tf);
    g_min = std::min(g_min, g);
    g_max = std::max(g_max, g);
    tf_max = std::max(tf_max, tf);
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
  QAbstractAxis* y_days = days_value_axis(days_log_, days_min, days_max);
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
  c->setTitle("Scaling over GPU counts: best plan per count<br><small>" +
              scaling_assumptions_text(rows, current_gpus, assumptions).toHtmlEscaped().replace("\n", "<br>") +
              "</small>");
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
