#pragma once
// Where one iteration of a plan goes: compute, TP communication, PP p2p, bubble, exposed DP
// communication and the optimizer step, as one stacked bar in seconds (the critical stage's
// timeline of the cost model; the parts add up to the analytic iteration time).
#include <QChartView>

#include "parallax/costmodel/predict.hpp"

namespace parallax::gui {

class TimeChartView : public QChartView {
 public:
  explicit TimeChartView(QWidget* parent = nullptr);
  void show_plan(const Prediction& pr, const QString& title);
};

}  // namespace parallax::gui
