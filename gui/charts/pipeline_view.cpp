#include "charts/pipeline_view.hpp"

#include <algorithm>
#include <cmath>

#include <QPainter>

#include "charts/chart_style.hpp"

namespace parallax::gui {
namespace {

constexpr int kLeft = 64;
constexpr int kRight = 16;
constexpr int kTop = 30;
constexpr int kBottom = 40;

// A tick step of 1, 2 or 5 times a power of ten giving about `ticks` ticks over `range`.
double tick_step(double range, int ticks) {
  const double raw = range / ticks;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
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
  iteration_s_ = sim.iteration_time_s;
  title_ = title;
  update();
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
  const double row = std::clamp((height() - kTop - kBottom) / static_cast<double>(pp_), 2.0, 28.0);
  const double h = row * static_cast<double>(pp_);
  const double scale = w / iteration_s_;

  QFont small = font();
  small.setPointSizeF(std::max(6.0, std::min(9.0, row * 0.6)));
  p.setFont(small);
  const int64_t label_every = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(12.0 / row)));
  for (int64_t r = 0; r < pp_; r += label_every) {
    const double y = kTop + row * static_cast<double>(r);
    p.drawText(QRectF(0, y, kLeft - 6, row), Qt::AlignRight | Qt::AlignVCenter,
               QString("rank %1").arg(r));
  }
  p.setPen(Qt::NoPen);
  const QColor colors[] = {palette_color(0), palette_color(1), palette_color(2)};
  for (const Step& s : steps_) {
    const QRectF box(kLeft + s.start_s * scale, kTop + row * s.rank + (row >= 6 ? 1 : 0),
                     std::max(0.6, s.duration_s * scale), row >= 6 ? row - 2 : row);
    p.fillRect(box, colors[s.kind]);
  }
  p.setPen(Qt::white);
  for (const Step& s : steps_) {
    const double bw = s.duration_s * scale;
    if (s.micro_batch < 0 || row < 12 || bw < 8.0 * (1 + std::floor(std::log10(s.micro_batch + 1)))) {
      continue;
    }
    p.drawText(QRectF(kLeft + s.start_s * scale, kTop + row * s.rank, bw, row), Qt::AlignCenter,
               QString::number(s.micro_batch));
  }
  // Time axis.
  p.setPen(Qt::black);
  p.setFont(font());
  const double y_axis = kTop + h + 2;
  p.drawLine(QPointF(kLeft, y_axis), QPointF(kLeft + w, y_axis));
  const double step = tick_step(iteration_s_, 8);
  for (double t = 0; t <= iteration_s_ + step / 2; t += step) {
    const double x = kLeft + t * scale;
    p.drawLine(QPointF(x, y_axis), QPointF(x, y_axis + 4));
    p.drawText(QRectF(x - 30, y_axis + 4, 60, 14), Qt::AlignHCenter | Qt::AlignTop,
               QString::number(t, 'g', 4));
  }
  p.drawText(QRectF(kLeft, y_axis + 18, w, 16), Qt::AlignHCenter | Qt::AlignTop,
             "seconds (one iteration, simulated)");
  // Legend, top right.
  const char* names[] = {"forward", "backward", "optimizer"};
  double x = width() - kRight - 3 * 84;
  for (int k = 0; k < 3; ++k) {
    p.fillRect(QRectF(x, 11, 10, 10), colors[k]);
    p.drawText(QRectF(x + 14, 8, 70, 16), Qt::AlignLeft | Qt::AlignVCenter, names[k]);
    x += 84;
  }
}

}  // namespace parallax::gui
