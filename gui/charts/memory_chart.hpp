#pragma once
// Where memory goes on each pipeline stage of one plan: stacked weights, gradients, optimizer
// state, activations and buffers per GPU, against the GPU's capacity and capacity minus reserve.
#include <QChartView>

#include "parallax/costmodel/predict.hpp"

namespace parallax::gui {

class MemoryChartView : public QChartView {
 public:
  explicit MemoryChartView(QWidget* parent = nullptr);
  void show_plan(const Prediction& pr, const QString& title);
};

}  // namespace parallax::gui
