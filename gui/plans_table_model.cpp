#include "plans_table_model.hpp"

#include <algorithm>

#include "parallax/inputs/plan_text.hpp"

namespace parallax::gui {
namespace {

const char* const kHeaders[] = {"#", "tp", "cp", "pp", "vpp", "dp", "ep", "mbs", "m", "recompute", "sp", "zero",
                                "iter s", "model TF/s", "Megatron TF/s", "MFU", "peak GB",
                                "headroom GB", "bubble"};
const char* const kHeaderTips[] = {
    "rank by iteration time; =: tied with #1, within the error of the ratio of two plans' times "
    "(docs/predict.md)",
    "tensor-parallel size",
    "context-parallel size (the sequence split over cp ranks)",
    "pipeline-parallel size",
    "virtual stages per pipeline rank (interleaved 1F1B)",
    "data-parallel size",
    "expert-parallel size (mixtures of experts); E/T: expert tensor parallelism T",
    "micro-batch size",
    "micro-batches per pipeline",
    "activation recomputation",
    "sequence parallelism",
    "ZeRO stage (1 = distributed optimizer)",
    "seconds per iteration (* = analytic, not simulated); its 80% interval in the cell's tooltip",
    "model TFLOP/s per GPU at the ranking time",
    "Megatron-convention TFLOP/s per GPU at the ranking time",
    "model FLOPs utilisation of the dtype's dense peak",
    "peak memory per GPU (most loaded stage), GB = 1e9 bytes",
    "capacity - peak - reserve, GB",
    "pipeline bubble share of the iteration"};

QString fixed(double v, int precision) { return QString::number(v, 'f', precision); }
QString pct(double fraction) { return fixed(fraction * 100, 1) + "%"; }

}  // namespace

PlansTableModel::PlansTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void PlansTableModel::set_plans(const std::vector<RankedPlan>& ranked,
                                const std::vector<PredictionInterval>& intervals, const TieRule& ties) {
  beginResetModel();
  const auto n = static_cast<std::ptrdiff_t>(std::min<size_t>(ranked.size(), kRows));
  plans_.assign(ranked.begin(), ranked.begin() + n);
  intervals_.assign(intervals.begin(), intervals.begin() + std::min<std::ptrdiff_t>(n, static_cast<std::ptrdiff_t>(intervals.size())));
  ties_ = ties;
  endResetModel();
}

int PlansTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(plans_.size());
}

int PlansTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : column_count;
}

QVariant PlansTableModel::value(const RankedPlan& r, int row, int column) const {
  const PlanSpec& p = r.plan;
  const Prediction& pr = r.prediction;
  const double scale = r.throughput_scale();
  switch (column) {
    case rank: return row + 1;
    case tp: return QVariant::fromValue<qint64>(p.tp);
    case cp: return QVariant::fromValue<qint64>(p.cp);
    case pp: return QVariant::fromValue<qint64>(p.pp);
    case vpp: return QVariant::fromValue<qint64>(p.vpp);
    case dp: return QVariant::fromValue<qint64>(p.dp);
    case ep: return QVariant::fromValue<qint64>(p.ep);
    case mbs: return QVariant::fromValue<qint64>(p.micro_batch);
    case m: return QVariant::fromValue<qint64>(p.num_micro_batches);
    case recompute: return QString(to_string(p.recompute));
    case sp: return p.sequence_parallel;
    case zero: return QVariant::fromValue<qint64>(p.zero);
    case iter_s: return r.time_s;
    case model_tflops: return pr.model_tflops_per_gpu * scale;
    case megatron_tflops: return pr.megatron_tflops_per_gpu * scale;
    case mfu: return pr.mfu * scale;
    case peak_gb: return pr.peak_bytes / 1e9;
    case headroom_gb: return r.headroom_bytes() / 1e9;
    case bubble: return pr.time.bubble_s / pr.iteration_time_s;
    default: return {};
  }
}

QString PlansTableModel::text(const RankedPlan& r, int row, int column) const {
  const QVariant v = value(r, row, column);
  switch (column) {
    case rank:  // as `parallax plan`: "2=" tied with #1
      return v.toString() + (row > 0 && ties_.tied(r.time_s, plans_.front().time_s) ? "=" : "");
    case sp: return v.toBool() ? "on" : "off";
    case ep: return v.toString() + (r.plan.etp != 0 ? "/" + QString::number(r.plan.etp) : "");
    case iter_s: return fixed(v.toDouble(), 3) + (r.refined ? "" : "*");
    case model_tflops:
    case megatron_tflops:
    case peak_gb:
    case headroom_gb: return fixed(v.toDouble(), 1);
    case mfu:
    case bubble: return pct(v.toDouble());
    default: return v.toString();
  }
}

QVariant PlansTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const RankedPlan& r = plans_[static_cast<size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole: return text(r, index.row(), index.column());
    case kValueRole: return value(r, index.row(), index.column());
    case Qt::ToolTipRole: {
      const auto i = static_cast<size_t>(index.row());
      if (index.column() != iter_s || i >= intervals_.size()) return QString::fromStdString(plan_line(r.plan));
      const PredictionInterval& iv = intervals_[i];
      return fixed(iv.level * 100, 0) + "% interval " + fixed(r.time_s * iv.low_ratio, 3) + " - " +
             fixed(r.time_s * iv.high_ratio, 3) + " s: " + QString::number(iv.rows) + " corpus rows of " +
             QString::number(iv.sources) + " sources predicted out of sample (docs/predict.md)";
    }
    case Qt::TextAlignmentRole:
      return index.column() == recompute ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                         : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    default: return {};
  }
}

QVariant PlansTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= column_count) {
    return QAbstractTableModel::headerData(section, orientation, role);
  }
  if (role == Qt::DisplayRole) return QString(kHeaders[section]);
  if (role == Qt::ToolTipRole) return QString(kHeaderTips[section]);
  return {};
}

}  // namespace parallax::gui
