#include "charts/scaling_chart.hpp"

#include <algorithm>
#include <cmath>

#include <QAreaSeries>
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

// A shaded band between two curves, filled with `color` at low opacity and no outline.
QAreaSeries* band_series(const QString& name, const QColor& color) {
  auto* area = new QAreaSeries;
  area->setUpperSeries(new QLineSeries(area));
  area->setLowerSeries(new QLineSeries(area));
  QColor fill = color;
  fill.setAlphaF(0.18f);
  area->setBrush(fill);
  area->setPen(Qt::NoPen);
  area->setName(name);
  return area;
}

double tflops_of(const CapacityRow& r) {  // at the ranking time, as the days
  return r.best->prediction.model_tflops_per_gpu * r.best->throughput_scale();
}

// The bands of the rows with a plan, when every one has a finite interval; else none (nullptrs).
struct Bands {
  QAreaSeries* tflops = nullptr;
  QAreaSeries* days = nullptr;
};
Bands interval_bands(const std::vector<CapacityRow>& rows, const std::vector<PredictionInterval>& intervals,
                     bool days_log) {
  if (intervals.size() != rows.size()) return {};
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].best && (!(intervals[i].low_ratio > 0) || !std::isfinite(intervals[i].high_ratio))) return {};
  const QString level = QString::number(kDefaultIntervalLevel * 100, 'f', 0) + "% interval";
  Bands b{band_series("TFLOP/s " + level, palette_color(0)), band_series("days " + level, palette_color(1))};
  const auto day = [days_log](double d) { return days_log ? std::log10(d) : d; };
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].best) continue;
    const double g = static_cast<double>(rows[i].gpus), tf = tflops_of(rows[i]);
    const PredictionInterval& iv = intervals[i];
    b.tflops->upperSeries()->append(g, tf / iv.low_ratio);
    b.tflops->lowerSeries()->append(g, tf / iv.high_ratio);
    b.days->upperSeries()->append(g, day(rows[i].days * iv.high_ratio));
    b.days->lowerSeries()->append(g, day(rows[i].days * iv.low_ratio));
  }
  return b;
}

// The axes reach the bands' ends (days plotted as log10 days when days_log).
void widen_to_bands(const Bands& b, bool days_log, double& days_min, double& days_max, double& tf_max) {
  if (!b.days) return;
  const auto day = [days_log](double v) { return days_log ? std::pow(10, v) : v; };
  for (const QPointF& p : b.days->upperSeries()->points()) days_max = std::max(days_max, day(p.y()));
  for (const QPointF& p : b.days->lowerSeries()->points()) days_min = std::min(days_min, day(p.y()));
  for (const QPointF& p : b.tflops->upperSeries()->points()) tf_max = std::max(tf_max, p.y());
}

// GPUs (log2) from below g_min to above g_max, TFLOP/s from 0 to nice numbers above y_max, and
// the days axis (days_value_axis).
struct Axes {
  QLogValueAxis* x;
  QValueAxis* y;
  QAbstractAxis* days;
};
Axes make_axes(double g_min, double g_max, double y_max, bool days_log, double days_min, double days_max) {
  auto* x = new QLogValueAxis;
  x->setBase(2);
  x->setLabelFormat("%g");
  x->setRange(g_min / 1.3, g_max * 1.3);
  x->setTitleText("GPUs (log2)");
  auto* y = new QValueAxis;
  y->setRange(0, y_max);
  y->applyNiceNumbers();
  y->setLabelFormat("%.0f");
  y->setTitleText("TFLOP/s per GPU");
  return {x, y, days_value_axis(days_log, days_min, days_max)};
}

}  // namespace

ScalingChartView::ScalingChartView(QWidget* parent) : QChartView(make_chart(), parent) {
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(420, 260);
  chart()->setTitle("Scaling over GPU counts (computing...)");
}

void ScalingChartView::show_rows(const std::vector<CapacityRow>& rows, int64_t current_gpus,
                                 const ScalingAssumptions& assumptions,
                                 const std::vector<PredictionInterval>& intervals) {
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
  const Bands bands = interval_bands(rows, intervals, days_log_);
  widen_to_bands(bands, days_log_, days_min, days_max, tf_max);
  for (const CapacityRow& r : rows) {
    if (!r.best) continue;
    const double g = static_cast<double>(r.gpus);
    const double tf = tflops_of(r);
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
    delete bands.tflops;
    delete bands.days;
    c->setTitle("Scaling: no GPU count of the sweep has a plan that fits");
    return;
  }
  if (bands.tflops) c->addSeries(bands.tflops);
  if (bands.days) c->addSeries(bands.days);
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

  const Axes axes = make_axes(g_min, g_max, y_max_, days_log_, days_min, days_max);
  y_max_ = axes.y->max();
  auto [x, y, y_days] = axes;
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);
  c->addAxis(y_days, Qt::AlignRight);
  for (QAbstractSeries* s : {static_cast<QAbstractSeries*>(tflops), static_cast<QAbstractSeries*>(knee),
                             static_cast<QAbstractSeries*>(current_line_), static_cast<QAbstractSeries*>(bands.tflops)}) {
    if (!s) continue;
    s->attachAxis(x);
    s->attachAxis(y);
  }
  for (QAbstractSeries* s : {static_cast<QAbstractSeries*>(days), static_cast<QAbstractSeries*>(bands.days)}) {
    if (!s) continue;
    s->attachAxis(x);
    s->attachAxis(y_days);
  }
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
