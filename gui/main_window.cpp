#include "main_window.hpp"

#include <QAction>
#include <QApplication>
#include <QFileDialog>
#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QScrollArea>
#include <QSplitter>
#include <QStatusBar>
#include <QTableView>
#include <QToolBar>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrent>

#include "charts/memory_chart.hpp"
#include "charts/pipeline_view.hpp"
#include "charts/scaling_chart.hpp"
#include "charts/time_chart.hpp"
#include "inputs_panel.hpp"
#include "latest_only_runner.hpp"
#include "parallax/core/atomic_file.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/export/export_text.hpp"
#include "parallax/inputs/plan_text.hpp"
#include "parallax/reports/report.hpp"
#include "plans_table_model.hpp"
#include "qstring_text.hpp"

namespace parallax::gui {
namespace {

using detail::qs;

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      plan_runner_(std::make_unique<LatestOnlyRunner>()),
      sim_runner_(std::make_unique<LatestOnlyRunner>()),
      scaling_runner_(std::make_unique<LatestOnlyRunner>()) {
  setWindowTitle("Parallax what-if");

  inputs_ = new InputsPanel;
  inputs_->setObjectName("inputs");
  auto* scroll = new QScrollArea;
  scroll->setWidget(inputs_);
  scroll->setWidgetResizable(true);
  scroll->setMinimumWidth(inputs_->sizeHint().width() + 24);

  auto* right = new QWidget;
  auto* grid = new QGridLayout(right);
  summary_ = new QLabel("planning...");
  summary_->setObjectName("summary");
  summary_->setWordWrap(true);
  table_model_ = new PlansTableModel(this);
  table_ = new QTableView;
  table_->setObjectName("plans_table");
  table_->setModel(table_model_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->setAlternatingRowColors(true);
  table_->setMinimumHeight(170);
  memory_ = new MemoryChartView;
  memory_->setObjectName("memory_chart");
  time_ = new TimeChartView;
  time_->setObjectName("time_chart");
  pipeline_ = new PipelineView;
  pipeline_->setObjectName("pipeline_view");
  scaling_ = new ScalingChartView;
  scaling_->setObjectName("scaling_chart");
  grid->addWidget(summary_, 0, 0, 1, 2);
  grid->addWidget(table_, 1, 0, 1, 2);
  grid->addWidget(memory_, 2, 0);
  grid->addWidget(scaling_, 2, 1);
  grid->addWidget(time_, 3, 0, 1, 2);
  grid->addWidget(pipeline_, 4, 0, 1, 2);
  grid->setRowStretch(1, 3);
  grid->setRowStretch(2, 4);
  grid->setRowStretch(3, 0);
  grid->setRowStretch(4, 4);

  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(scroll);
  split->addWidget(right);
  split->setStretchFactor(1, 1);
  setCentralWidget(split);
  build_menus();

  replan_timer_.setSingleShot(true);
  replan_timer_.setInterval(0);
  connect(&replan_timer_, &QTimer::timeout, this, &MainWindow::replan);
  scaling_timer_.setSingleShot(true);
  scaling_timer_.setInterval(150);
  connect(&scaling_timer_, &QTimer::timeout, this, &MainWindow::start_scaling);
  connect(inputs_, &InputsPanel::changed, this, &MainWindow::on_inputs_changed);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current, const QModelIndex&) {
            if (current.isValid()) show_selected(current.row());
          });
  connect(&report_watcher_, &QFutureWatcher<QString>::finished, this, [this] {
    const QString r = report_watcher_.result();
    if (r.startsWith("ok:")) {
      statusBar()->showMessage("wrote " + r.mid(3), 5000);
      emit report_saved(r.mid(3));
    } else {
      emit action_failed(r);
    }
  });
  on_inputs_changed();  // the panel's defaults: the MT-NLG setting
}

MainWindow::~MainWindow() = default;

void MainWindow::build_menus() {
  QMenu* file = menuBar()->addMenu("&File");
  QToolBar* bar = addToolBar("actions");
  bar->setObjectName("actions");
  auto add = [&](const QString& text, const QKeySequence& key, auto&& slot, bool on_bar) {
    QAction* a = file->addAction(text);
    a->setShortcut(key);
    connect(a, &QAction::triggered, this, slot);
    if (on_bar) bar->addAction(a);
    return a;
  };
  const QString json = "JSON (*.json);;All files (*)";
  add("&Open session...", QKeySequence::Open, [this, json] {
    ask_and_run("Open what-if session", json, false, [this](const QString& p) { open_session(p); });
  }, true);
  add("&Save session...", QKeySequence::Save, [this, json] {
    ask_and_run("Save what-if session", json, true, [this](const QString& p) { save_session(p); });
  }, true);
  file->addSeparator();
  bar->addSeparator();
  add("Save &plan JSON...", QKeySequence(), [this, json] {
    ask_and_run("Save the selected plan", json, true, [this](const QString& p) { save_plan_json(p); });
  }, true);
  QMenu* exp = file->addMenu("&Export");
  const std::tuple<const char*, const char*, const char*> formats[] = {
      {"Megatron-LM arguments...", "megatron", "megatron"},
      {"DeepSpeed config...", "deepspeed", "megatron"},
      {"SLURM script (Megatron-LM, torchrun)...", "slurm", "megatron"},
      {"SLURM script (parallax run, mpirun)...", "slurm", "parallax"},
      {"mpirun hostfile and command...", "mpirun", "megatron"},
      {"SLURM script (Megatron-DeepSpeed, with its DeepSpeed config)...", "megatron-deepspeed", "megatron"},
      {"TorchTitan job config (TOML)...", "torchtitan", "megatron"},
      {"TorchTitan launch script...", "torchtitan-launch", "megatron"}};
  for (const auto& [label, format, launcher] : formats) {
    QAction* a = exp->addAction(label);
    connect(a, &QAction::triggered, this, [this, f = QString(format), l = QString(launcher)] {
      ask_and_run("Export the selected plan", "All files (*)", true,
                  [this, f, l](const QString& p) { export_plan(f, p, l); });
    });
  }
  bar->addAction(exp->menuAction());
  add("Save HTML &report...", QKeySequence(), [this] {
    ask_and_run("Save the report", "HTML (*.html);;All files (*)", true,
                [this](const QString& p) { save_report(p); });
  }, true);
  file->addSeparator();
  add("&Quit", QKeySequence::Quit, [this] { close(); }, false);
  connect(this, &MainWindow::action_failed, this,
          [this](const QString& m) { QMessageBox::warning(this, "Parallax", m); });
}

void MainWindow::ask_and_run(const QString& caption, const QString& filter, bool save,
                             const std::function<void(const QString&)>& action) {
  const QString path = save ? QFileDialog::getSaveFileName(this, caption, QString(), filter)
                            : QFileDialog::getOpenFileName(this, caption, QString(), filter);
  if (path.isEmpty()) return;
  try {
    action(path);
    statusBar()->showMessage((save ? "wrote " : "opened ") + path, 5000);
  } catch (const InputError& e) {
    QMessageBox::warning(this, "Parallax", QString::fromUtf8(e.what()));
  }
}

void MainWindow::on_inputs_changed() {
  if (!change_clock_.isValid()) change_clock_.start();
  if (!replan_timer_.isActive()) replan_timer_.start();
}

void MainWindow::replan() {
  const WhatIfInputs w = inputs_->inputs();
  if (asked_once_ && w == asked_) {  // e.g. a field edited and edited back
    change_clock_.invalidate();
    return;
  }
  asked_ = w;
  asked_once_ = true;
  scaling_timer_.stop();
  scaling_runner_->cancel();
  sim_runner_->cancel();
  plan_runner_->submit([this, w]() -> LatestOnlyRunner::Delivery {
    try {
      auto o = std::make_shared<const PlanOutcome>(plan_what_if(w));
      return [this, o] { show_outcome(o); };
    } catch (const InputError& e) {
      return [this, e] { show_input_error(e); };
    }
  });
}

void MainWindow::show_outcome(const std::shared_ptr<const PlanOutcome>& o) {
  outcome_ = o;
  inputs_->clear_error();
  const SearchResult& s = o->search;
  table_model_->set_plans(s.plans, o->intervals, o->ties);
  {
    const QSignalBlocker block(table_->selectionModel());
    table_->selectRow(0);
  }
  show_selected(0);
  scaling_->set_current(o->in.gpus);
  last_replan_ms_ = change_clock_.isValid() ? static_cast<double>(change_clock_.nsecsElapsed()) / 1e6 : 0;
  change_clock_.invalidate();
  summary_->setText(QString("<b>%1</b> on %2 × %3: %4 plans fit of %5 admitted (%6 considered); the "
                            "top %7 re-timed by the event simulator (* = analytic). Answered in %8 ms.")
                        .arg(qs(o->in.model.name))
                        .arg(o->in.gpus)
                        .arg(qs(o->in.cluster.gpu.name))
                        .arg(s.plans.size())
                        .arg(s.evaluated)
                        .arg(s.considered)
                        .arg(o->in.top_k)
                        .arg(last_replan_ms_, 0, 'f', 0));
  setWindowTitle(QString("Parallax what-if: %1 on %2 × %3")
                     .arg(qs(o->in.model.name))
                     .arg(o->in.gpus)
                     .arg(qs(o->in.cluster.gpu.name)));
  statusBar()->showMessage(QString("re-planned in %1 ms").arg(last_replan_ms_, 0, 'f', 0));
  scaling_timer_.start();
  emit planned();
}

void MainWindow::show_input_error(const InputError& e) {
  change_clock_.invalidate();
  inputs_->mark_error(e);
  statusBar()->showMessage(outcome_ ? "input error: showing the last good answer" : "input error");
  emit plan_failed(QString::fromUtf8(e.what()));
}

QString MainWindow::plan_title(int row) const {
  const PlanSpec& p = outcome_->search.plans[static_cast<size_t>(row)].plan;
  return QString("plan #%1 (tp %2, pp %3, dp %4, mbs %5)")
      .arg(row + 1)
      .arg(p.tp)
      .arg(p.pp)
      .arg(p.dp)
      .arg(p.micro_batch);
}

int MainWindow::selected_row() const {
  const QModelIndex i = table_->selectionModel()->currentIndex();
  return i.isValid() ? i.row() : 0;
}

void MainWindow::select_row(int row) { table_->selectRow(row); }

void MainWindow::show_selected(int row) {
  if (!outcome_ || row < 0 || static_cast<size_t>(row) >= outcome_->search.plans.size()) return;
  const RankedPlan& r = outcome_->search.plans[static_cast<size_t>(row)];
  const QString title = plan_title(row);
  memory_->show_plan(r.prediction, "Memory per GPU by stage, " + title);
  time_->show_plan(r.prediction, "Time per iteration, " + title);
  const QString pipe_title = "Pipeline, one simulated iteration: " + qs(plan_line(r.plan));
  if (row == 0) {
    sim_runner_->cancel();
    pipeline_->show_sim(outcome_->winner_sim, r.plan.pp, pipe_title);
    emit selection_shown(row);
    return;
  }
  const std::shared_ptr<const PlanOutcome> o = outcome_;
  sim_runner_->submit([this, o, row, pipe_title]() -> LatestOnlyRunner::Delivery {
    auto sim = std::make_shared<const SimResult>(simulate_ranked(*o, static_cast<size_t>(row)));
    return [this, o, row, sim, pipe_title] {
      if (o != outcome_) return;
      pipeline_->show_sim(*sim, o->search.plans[static_cast<size_t>(row)].plan.pp, pipe_title);
      emit selection_shown(row);
    };
  });
}

void MainWindow::start_scaling() {
  if (!outcome_) return;
  PlannerInputs in = outcome_->in;
  in.threads = 1;  // leaves a core to the next re-plan, which must not wait for the sweep
  scaling_runner_->submit([this, in]() -> LatestOnlyRunner::Delivery {
    auto s = std::make_shared<const ScalingOutcome>(scaling_what_if(in));
    return [this, s] {
      scaling_->show_rows(s->rows, s->current_gpus,
                          ScalingAssumptions{s->tokens, s->tokens_assumed, s->price_per_gpu_hour_usd},
                          s->intervals);
      emit scaling_shown();
    };
  });
}

bool MainWindow::idle() const {
  return !replan_timer_.isActive() && !scaling_timer_.isActive() && !plan_runner_->busy() &&
         !sim_runner_->busy() && !scaling_runner_->busy();
}

PlanFile MainWindow::selected_plan_file() const {
  if (!outcome_) throw InputError("parallax-gui", "plan", "no plan yet: the inputs have no answer");
  const PlannerInputs& in = outcome_->in;
  const size_t row = static_cast<size_t>(selected_row());
  return PlanFile{in.model, in.cluster, in.job, outcome_->search.plans.at(row).plan, in.gpus};
}

void MainWindow::save_plan_json(const QString& path) {
  write_file_atomic(path.toStdString(), to_json(selected_plan_file()).dump(2) + "\n");
  last_plan_path_ = path;
}

void MainWindow::export_plan(const QString& format, const QString& path,
                             const QString& slurm_launcher) const {
  LaunchOptions lo;
  lo.plan_path = last_plan_path_.toStdString();
  write_file_atomic(path.toStdString(), export_text(selected_plan_file(), format.toStdString(), lo,
                                                    slurm_launcher.toStdString()));
}

void MainWindow::save_session(const QString& path) const {
  write_file_atomic(path.toStdString(), session_json(inputs_->inputs()).dump(2) + "\n");
}

void MainWindow::open_session(const QString& path) {
  const std::string p = path.toStdString();
  const nlohmann::json j = read_json_file(p);
  inputs_->set_inputs(read_session(j, p));
}

void MainWindow::save_report(const QString& path) {
  if (!outcome_) throw InputError("parallax-gui", "report", "no plan yet: the inputs have no answer");
  if (report_watcher_.isRunning()) throw InputError("parallax-gui", "report", "a report is being written");
  ReportInputs in;
  in.planner = outcome_->in;
  in.version = PARALLAX_VERSION;
  statusBar()->showMessage("writing the report (planning, simulating, scaling, sensitivity)...");
  report_watcher_.setFuture(QtConcurrent::run([in, path]() -> QString {
    try {
      write_file_atomic(path.toStdString(), render_html(build_report(in)));
      return "ok:" + path;
    } catch (const std::exception& e) {
      return QString::fromUtf8(e.what());
    }
  }));
}

}  // namespace parallax::gui
