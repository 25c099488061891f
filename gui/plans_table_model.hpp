#pragma once
// The top plans as `parallax plan` tabulates them: the same columns and precision, one row per
// ranked plan, best first. Qt::DisplayRole gives the CLI's text; kValueRole the unrounded number
// (for tests and sorting), kPlanLineRole / tooltip the plan's one-line description.
#include <vector>

#include <QAbstractTableModel>

#include "parallax/costmodel/intervals.hpp"
#include "parallax/planner/planner.hpp"

namespace parallax::gui {

class PlansTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    rank, tp, cp, pp, vpp, dp, ep, mbs, m, recompute, sp, zero, iter_s, model_tflops, megatron_tflops,
    mfu, peak_gb, headroom_gb, bubble, column_count
  };
  static constexpr int kValueRole = Qt::UserRole + 1;
  static constexpr int kRows = 10;  // `parallax plan --top` default

  explicit PlansTableModel(QObject* parent = nullptr);

  // Keeps the first kRows, each with its prediction interval; "=" marks the ranks tied with #1.
  void set_plans(const std::vector<RankedPlan>& ranked, const std::vector<PredictionInterval>& intervals,
                 const TieRule& ties);
  const std::vector<RankedPlan>& plans() const { return plans_; }

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  int columnCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  QVariant value(const RankedPlan& r, int row, int column) const;
  QString text(const RankedPlan& r, int row, int column) const;

  std::vector<RankedPlan> plans_;
  std::vector<PredictionInterval> intervals_;
  TieRule ties_;
};

}  // namespace parallax::gui
