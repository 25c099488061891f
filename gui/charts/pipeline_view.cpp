#include "charts/pipeline_view.hpp"

#include <algorithm>
#include <cmath>

#include <QFontMetricsF>
#include <QPainter>

#include "charts/chart_style.hpp"
#include "parallax/reports/charts.hpp"

namespace parallax::gui {
namespace {

constexpr int kLeft = 64;
constexpr int kRight = 16;
constexpr int kTop = 30;
constexpr int kBottom = 58;
const QColor kBubble("#d9d9d9");

// A tick step of 1, 2 or 5 times a power of ten giving about `ticks` ticks over `range`.
double tick_step(double range, int ticks) {
  const double raw = range / ticks;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

// The time axis at y_axis, w wide from kLeft, ticks from 0 to iteration_s and its title.
void draw_time_axis(QPainter& p, double y_axis, double w, double iteration_s, bool binned) {
  const double scale = w / iteration_s;
  p.drawLine(QPointF(kLeft, y_axis), QPointF(kLeft + w, y_axis));
  const double step = tick_step(iteration_s, 8);
  for (double t = 0; t <= iteration_s + step / 2; t += step) {
    const double x = kLeft + t * scale;
    p.drawLine(QPointF(x, y_axis), QPointF(x, y_axis + 4));
    p.drawText(QRectF(x - 30, y_axis + 4, 60, 14), Qt::AlignHCenter | Qt::AlignTop,
               QString::number(t, 'g', 4));
  }
  QString axis = "seconds (one iteration, simulated)";
  if (binned) axis += "; steps binned into phases (fill, warm-up, steady 1F1B, cool-down, gradient sync)";
  p.drawText(QRectF(kLeft, y_axis + 18, w, 16), Qt::AlignHCenter | Qt::AlignTop, axis);
}

// A swatch and a name per item, left to right from kLeft at y = ly, in the painter's font.
void draw_legend(QPainter& p, double ly, const std::vector<std::pair<QString, QColor>>& items) {
  const QFontMetricsF fm(p.font());
  double x = kLeft;
  for (const auto& [name, color] : items) {
    p.fillRect(QRectF(x, ly + 2, 10, 10), color);
    p.setPen(QColor("#888888"));
    p.drawRect(QRectF(x, ly + 2, 10, 10));
    p.setPen(Qt::black);
    p.drawText(QRectF(x + 14, ly, fm.horizontalAdvance(name) + 4, 14), Qt::AlignLeft | Qt::AlignVCenter, name);
    x += 14 + fm.horizontalAdvance(name) + 16;
  }
}

}  // namespace

PipelineView::PipelineView(QWidget* parent) : QWidget(parent) {
  setMinimumSize(420, 200);
  setAutoFillBackground(false);
}

QSize PipelineView::sizeHint() const { return {900, 300}; }

void PipelineView::show_sim(const SimResult& sim, int64_t pp, const QString& title) {
  steps_.clear();
  for (const SimOp& op : sim.ops) {
    if (op.stream != SimStream::compute) continue;
    int kind = -1;
    if (op.kind == SimOpKind::forward) kind = 0;
    if (op.kind == SimOpKind::backward) kind = 1;
    if (op.kind == SimOpKind::optimizer) kind = 2;
    if (kind < 0) continue;
    steps_.push_back({op.start_s, op.duration_s, op.rank, op.micro_batch, kind});
  }
  pp_ = pp;
  rows_ = pipeline_rows(pp);
  binned_ = pipeline_steps_per_rank(sim) > kPipelineMaxSteps;
  phases_.clear();
  if (binned_) {
    for (int64_t r : rows_) phases_.push_back(r < 0 ? std::vector<PipelinePhase>{} : pipeline_phases(sim, r));
  }
  iteration_s_ = sim.iteration_time_s;
  title_ = title;
  update();
}

double PipelineView::row_px() const {
  if (rows_.empty()) return 1;
  return std::clamp((height() - kTop - kBottom) / static_cast<double>(rows_.size()), 2.0, 40.0);
}

QFont PipelineView::label_font() const {
  QFont small = font();
  small.setPointSizeF(8);
  return small;
}

std::vector<std::pair<int64_t, QRectF>> PipelineView::rank_label_rects() const {
  std::vector<std::pair<int64_t, QRectF>> out;
  const double row = row_px();
  const double text_h = QFontMetricsF(label_font()).height();
  // Every k-th row, k from the font's height: labels k rows apart never overlap.
  const auto every = static_cast<size_t>(std::max(1.0, std::ceil(text_h / row)));
  for (size_t i = 0; i < rows_.size(); ++i) {
    const bool last = i + 1 == rows_.size();
    if (rows_[i] < 0 || (i % every != 0 && !last)) continue;
    const double mid = kTop + row * (static_cast<double>(i) + 0.5);
    const QRectF box(0, mid - text_h / 2, kLeft - 6, text_h);
    if (!out.empty() && out.back().second.intersects(box)) continue;  // the last rank, too close
    out.emplace_back(rows_[i], box);
  }
  return out;
}

void PipelineView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(Qt::black);
  p.drawText(QRect(8, 4, width() - 16, kTop - 8), Qt::AlignLeft | Qt::AlignVCenter, title_);
  p.setFont(font());
  if (pp_ <= 0 || iteration_s_ <= 0) return;

  const double w = std::max(1, width() - kLeft - kRight);
  const double row = row_px();
  const double h = row * static_cast<double>(rows_.size());
  const double scale = w / iteration_s_;
  const double pad = row >= 6 ? 1 : 0;

  p.setFont(label_font());
  for (const auto& [r, box] : rank_label_rects()) {
    p.drawText(box, Qt::AlignRight | Qt::AlignVCenter, QString("rank %1").arg(r));
  }
  const QColor colors[] = {palette_color(0), palette_color(1), palette_color(2)};
  const QColor part_colors[] = {palette_color(0), palette_color(1), palette_color(3), kBubble};
  std::vector<int64_t> index_of(static_cast<size_t>(std::max<int64_t>(pp_, 1)), -1);
  for (size_t i = 0; i < rows_.size(); ++i) {
    const double y = kTop + row * static_cast<double>(i);
    if (rows_[i] < 0) {
      p.setPen(QPen(QColor("#999999"), 1, Qt::DotLine));
      p.drawLine(QPointF(kLeft, y + row / 2), QPointF(kLeft + w, y + row / 2));
      if (row >= 10) {
        p.setPen(QColor("#555555"));
        p.drawText(QRectF(kLeft, y, w, row), Qt::AlignCenter,
                   QString("ranks %1-%2 not shown").arg(rows_[i - 1] + 1).arg(rows_[i + 1] - 1));
      }
      continue;
    }
    index_of[static_cast<size_t>(rows_[i])] = static_cast<int64_t>(i);
    if (!binned_) continue;
    for (const PipelinePhase& ph : phases_[i]) {
      const double len = ph.end_s - ph.start_s;
      const double parts[] = {ph.forward_s, ph.backward_s, ph.comm_s, ph.bubble_s};
      double yy = y + pad;
      for (int k = 0; k < 4; ++k) {
        const double band = parts[k] / len * (row - 2 * pad);
        p.fillRect(QRectF(kLeft + ph.start_s * scale, yy, std::max(0.6, len * scale), band), part_colors[k]);
        yy += band;
      }
    }
  }
  p.setPen(Qt::NoPen);
  for (const Step& s : steps_) {
    const int64_t i = s.rank < pp_ ? index_of[static_cast<size_t>(s.rank)] : -1;
    if (i < 0 || (binned_ && s.kind != 2)) continue;
    const QRectF box(kLeft + s.start_s * scale, kTop + row * static_cast<double>(i) + pad,
                     std::max(0.6, s.duration_s * scale), row - 2 * pad);
    p.fillRect(box, colors[s.kind]);
  }
  p.setPen(Qt::white);
  for (const Step& s : steps_) {
    const int64_t i = s.rank < pp_ ? index_of[static_cast<size_t>(s.rank)] : -1;
    const double bw = s.duration_s * scale;
    if (i < 0 || binned_ || s.micro_batch < 0 || row < 12 ||
        bw < 8.0 * (1 + std::floor(std::log10(s.micro_batch + 1)))) {
      continue;
    }
    p.drawText(QRectF(kLeft + s.start_s * scale, kTop + row * static_cast<double>(i), bw, row),
               Qt::AlignCenter, QString::number(s.micro_batch));
  }
  p.setPen(Qt::black);
  p.setFont(font());
  draw_time_axis(p, kTop + h + 2, w, iteration_s_, binned_);
  // Legend, along the bottom.
  std::vector<std::pair<QString, QColor>> items = {{"forward", colors[0]}, {"backward", colors[1]}};
  if (binned_) items.push_back({"exposed communication", part_colors[2]});
  items.push_back({binned_ ? "bubble (idle)" : "idle (white)", binned_ ? kBubble : QColor(Qt::white)});
  items.push_back({"optimizer", colors[2]});
  draw_legend(p, height() - 16, items);
}

}  // namespace parallax::gui
