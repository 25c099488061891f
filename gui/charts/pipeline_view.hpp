#pragma once
// The pipeline timeline of one simulated iteration: one row per pipeline rank, each forward and
// backward step of each micro-batch (and the optimizer step) where the event simulator placed it.
// Painted directly: an MT-NLG iteration has 16,800 steps, too many for one chart series each.
#include <cstdint>
#include <vector>

#include <QString>
#include <QWidget>

#include "parallax/simulator/simulate.hpp"

namespace parallax::gui {

class PipelineView : public QWidget {
 public:
  explicit PipelineView(QWidget* parent = nullptr);
  void show_sim(const SimResult& sim, int64_t pp, const QString& title);
  size_t steps() const { return steps_.size(); }
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
  std::vector<Step> steps_;
  int64_t pp_ = 0;
  double iteration_s_ = 0;
  QString title_ = "Pipeline timeline of one simulated iteration";
};

}  // namespace parallax::gui
