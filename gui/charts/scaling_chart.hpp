#pragma once
// Where scaling stops paying: the best plan's model TFLOP/s per GPU and the days to train over GPU
// counts (log2 axis), the knee (first count under 80% scaling efficiency) and the current count.
#include <cstdint>
#include <vector>

#include <QChartView>

#include "parallax/planner/capacity.hpp"

class QLineSeries;

namespace parallax::gui {

class ScalingChartView : public QChartView {
 public:
  explicit ScalingChartView(QWidget* parent = nullptr);
  // The curve of a sweep, with `current_gpus` marked.
  void show_rows(const std::vector<CapacityRow>& rows, int64_t current_gpus);
  // Moves the current-count line at once, before the sweep of the new question arrives.
  void set_current(int64_t gpus);
  int64_t current() const { return current_gpus_; }

 private:
  void place_current_line();

  QLineSeries* current_line_ = nullptr;  // owned by the chart
  int64_t current_gpus_ = 0;
  double y_max_ = 1;
};

}  // namespace parallax::gui
