#pragma once
// The what-if window: the questions on the left; on the right, linked to the selected plan, the
// top plans table, memory per stage, time per iteration, the simulated pipeline timeline and the
// scaling curve. Every change re-plans on a worker thread (LatestOnlyRunner: stale answers are
// dropped); a bad input is marked at its field with the CLI's message and the last good answer
// stays on screen. The window computes nothing itself: it calls the planner, simulator, reports
// and export APIs (what_if_run.hpp).
#include <memory>

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QMainWindow>
#include <QString>
#include <QTimer>

#include "parallax/core/error.hpp"
#include "parallax/core/plan_file.hpp"
#include "what_if_run.hpp"

class QLabel;
class QTableView;

namespace parallax::gui {

class InputsPanel;
class LatestOnlyRunner;
class MemoryChartView;
class PipelineView;
class PlansTableModel;
class ScalingChartView;
class TimeChartView;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  InputsPanel* inputs_panel() const { return inputs_; }
  // The last good answer (what the right side shows), or null before the first one.
  std::shared_ptr<const PlanOutcome> outcome() const { return outcome_; }
  int selected_row() const;
  void select_row(int row);
  // Milliseconds from the input change to the new table and charts, for the last answer.
  double last_replan_ms() const { return last_replan_ms_; }
  // The worker threads are idle (no re-plan, simulation or sweep running or queued).
  bool idle() const;

  // The actions; the menu asks for a path and calls these. They throw InputError on failure.
  // The plan is the selected row of the answer shown.
  void save_plan_json(const QString& path);           // as `parallax plan --out`
  void export_plan(const QString& format, const QString& path,
                   const QString& slurm_launcher = "megatron") const;  // as `parallax export`
  void save_session(const QString& path) const;
  void open_session(const QString& path);
  // As `parallax report --out` for the answer shown; runs in the background and ends with
  // report_saved or action_failed.
  void save_report(const QString& path);

 signals:
  void planned();                             // a new answer is shown (table, memory, time, pipeline)
  void plan_failed(const QString& message);   // bad input: marked, last answer kept
  void selection_shown(int row);              // every chart of the selected row drawn
  void scaling_shown();
  void report_saved(const QString& path);
  void action_failed(const QString& message);

 private:
  void build_menus();
  void on_inputs_changed();
  void replan();
  void show_outcome(const std::shared_ptr<const PlanOutcome>& o);
  void show_input_error(const InputError& e);
  void show_selected(int row);
  void start_scaling();
  PlanFile selected_plan_file() const;
  QString plan_title(int row) const;
  void ask_and_run(const QString& caption, const QString& filter, bool save,
                   const std::function<void(const QString&)>& action);

  InputsPanel* inputs_ = nullptr;
  QLabel* summary_ = nullptr;
  PlansTableModel* table_model_ = nullptr;
  QTableView* table_ = nullptr;
  MemoryChartView* memory_ = nullptr;
  TimeChartView* time_ = nullptr;
  PipelineView* pipeline_ = nullptr;
  ScalingChartView* scaling_ = nullptr;

  std::shared_ptr<const PlanOutcome> outcome_;
  WhatIfInputs asked_;           // the question of the latest re-plan request
  bool asked_once_ = false;
  QTimer replan_timer_;          // coalesces the changes of one event-loop pass
  QTimer scaling_timer_;         // the sweep starts once the answer has been shown a moment
  QElapsedTimer change_clock_;   // since the first change not yet answered
  double last_replan_ms_ = 0;
  QString last_plan_path_ = "plan.json";  // what exported launch scripts read
  QFutureWatcher<QString> report_watcher_;

  // Declared last so they are destroyed first: each waits for its running computation.
  std::unique_ptr<LatestOnlyRunner> plan_runner_;
  std::unique_ptr<LatestOnlyRunner> sim_runner_;
  std::unique_ptr<LatestOnlyRunner> scaling_runner_;
};

}  // namespace parallax::gui
