#pragma once
// The pipeline timeline of one simulated iteration: one row per pipeline rank, each forward and
// backward step of each micro-batch (and the optimizer step) where the event simulator placed it.
// Painted directly: an MT-NLG iteration has 16,800 steps, too many for one chart series each.
// Large pipelines are shown as the report shows them (charts.hpp): first, middle and last ranks
// with the gaps marked, and above kPipelineMaxSteps steps per rank, phase bars split by forward,
// backward, exposed communication and bubble. Rank labels are thinned so that they never overlap.
#include <cstdint>
#include <vector>

#include <QRectF>
#include <QString>
#include <QWidget>

#include "parallax/reports/pipeline_phases.hpp"
#include "parallax/simulator/simulate.hpp"

namespace parallax::gui {

class PipelineView : public QWidget {
 public:
  explicit PipelineView(QWidget* parent = nullptr);
  void show_sim(const SimResult& sim, int64_t pp, const QString& title);
  size_t steps() const { return steps_.size(); }
  bool binned() const { return binned_; }
  // The ranks drawn, in order; -1 marks a gap (pipeline_rows).
  const std::vector<int64_t>& rows() const { return rows_; }
  // Where each drawn rank label sits at the current size and font: (rank, box).
  std::vector<std::pair<int64_t, QRectF>> rank_label_rects() const;
  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  struct Step {
    double start_s;
    double duration_s;
    int32_t rank;
    int32_t micro_batch;
    int kind;  // 0 forward, 1 backward, 2 optimizer
  };
  double row_px() const;
  QFont label_font() const;
  std::vector<Step> steps_;
  std::vector<int64_t> rows_;
  std::vector<std::vector<PipelinePhase>> phases_;  // per entry of rows_ when binned_
  bool binned_ = false;
  int64_t pp_ = 0;
  double iteration_s_ = 0;
  QString title_ = "Pipeline timeline of one simulated iteration";
};

}  // namespace parallax::gui
