#pragma once
// Where scaling stops paying: the best plan's model TFLOP/s per GPU and the days to train over GPU
// counts (log2 axis), the knee (first count under 80% scaling efficiency) and the current count.
#include <cstdint>
#include <vector>

#include <QChartView>
#include <QString>

#include "parallax/costmodel/intervals.hpp"
#include "parallax/planner/capacity.hpp"

class QAreaSeries;
class QLineSeries;

namespace parallax::gui {

// What the days and cost depend on, printed under the chart's title.
struct ScalingAssumptions {
  double tokens = 0;
  bool tokens_assumed = false;  // kDefaultTokensPerParam per parameter (no tokens given)
  double price_per_gpu_hour_usd = 0;  // 0: none given, cost unknown
};

// "Days: 10.6T tokens = 20 tokens/parameter (Chinchilla, Hoffmann et al. 2022; no tokens
// given).\nCost at 2240 GPUs: — (no price given)."
QString scaling_assumptions_text(const std::vector<CapacityRow>& rows, int64_t current_gpus,
                                 const ScalingAssumptions& a);

class ScalingChartView : public QChartView {
 public:
  explicit ScalingChartView(QWidget* parent = nullptr);
  // The curve of a sweep, with `current_gpus` marked.
  // The days axis is log10 (labels at 1, 2, 5 times powers of ten) when the days span more than
  // a decade, linear otherwise. With `intervals` (one per row), each curve is shaded over its
  // prediction interval: TFLOP/s / [high, low] ratio, days x [low, high] (none where an end is
  // infinite).
  void show_rows(const std::vector<CapacityRow>& rows, int64_t current_gpus,
                 const ScalingAssumptions& assumptions = {},
                 const std::vector<PredictionInterval>& intervals = {});
  bool days_axis_log() const { return days_log_; }
  // Moves the current-count line at once, before the sweep of the new question arrives.
  void set_current(int64_t gpus);
  int64_t current() const { return current_gpus_; }

 private:
  void place_current_line();

  QLineSeries* current_line_ = nullptr;  // owned by the chart
  int64_t current_gpus_ = 0;
  double y_max_ = 1;
  bool days_log_ = false;
};

}  // namespace parallax::gui
