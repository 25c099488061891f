// The window's actions write what the CLI writes for the same question: the plan file of
// `parallax plan --out`, the launch files of `parallax export`, the HTML of `parallax report`;
// a saved session reopens to the same inputs and answer, and a broken one is refused with a
// message naming the file and the field.
#include <QComboBox>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>

#include "gui_test_util.hpp"
#include "inputs_panel.hpp"
#include "parallax/core/atomic_file.hpp"
#include "parallax/core/error.hpp"

using namespace parallax;
using namespace parallax::gui;
using namespace parallax::gui::test;

namespace {

QByteArray slurp(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return "missing: " + path.toUtf8();
  return f.readAll();
}

}  // namespace

class TestActions : public QObject {
  Q_OBJECT

 private slots:
  void plan_and_exports_equal_the_cli() {
    QTemporaryDir dir;
    MainWindow w;
    w.show();
    type_into(find<QLineEdit>(w, "tokens"), "270e9");
    type_into(find<QLineEdit>(w, "price"), "2.5");
    QVERIFY(wait_idle(w));
    const QString gui_plan = dir.path() + "/gui_plan.json";
    const QString cli_plan = dir.path() + "/cli_plan.json";
    w.save_plan_json(gui_plan);
    const CliRun r = run_cli({"plan", "--tokens", "270e9", "--price", "2.5", "--out", cli_plan});
    QCOMPARE(r.code, 0);
    QCOMPARE(slurp(gui_plan), slurp(cli_plan));

    const std::pair<const char*, const char*> formats[] = {
        {"megatron", "megatron"}, {"deepspeed", "megatron"}, {"slurm", "megatron"},
        {"slurm", "parallax"},    {"mpirun", "megatron"}};
    for (const auto& [format, launcher] : formats) {
      const QString out = dir.path() + "/export_" + format + "_" + launcher;
      const CliRun cli = run_cli({"export", "--plan", gui_plan, "--format", format, "--launcher", launcher});
      QCOMPARE(cli.code, 0);
      w.export_plan(format, out, launcher);
      QCOMPARE(slurp(out), cli.out);
    }
    // A plan a format cannot run is refused with the exporter's reason, as the CLI refuses it:
    // TorchTitan has no flavor of MT-NLG 530B's shape.
    for (const char* format : {"torchtitan", "torchtitan-launch"}) {
      const CliRun cli = run_cli({"export", "--plan", gui_plan, "--format", format});
      QCOMPARE(cli.code, 2);
      QString why;
      try {
        w.export_plan(format, dir.path() + "/refused", "megatron");
      } catch (const InputError& e) {
        why = QString::fromStdString(e.what());
      }
      QVERIFY2(!why.isEmpty() && QString::fromUtf8(cli.err).contains(why), qPrintable(why + " | " + QString::fromUtf8(cli.err)));
      QVERIFY(!QFileInfo::exists(dir.path() + "/refused"));
    }

    // Another row: its plan, not the winner's.
    w.select_row(1);
    w.save_plan_json(gui_plan);
    QVERIFY(slurp(gui_plan) != slurp(cli_plan));
  }

  void report_equals_the_cli_report() {
    QTemporaryDir dir;
    MainWindow w;
    w.show();
    find<QComboBox>(w, "model")->setCurrentText("gpt3-175b");
    type_into(find<QLineEdit>(w, "gpus"), "512");
    type_into(find<QLineEdit>(w, "global_batch"), "1536");
    type_into(find<QLineEdit>(w, "price"), "2");
    QVERIFY(wait_idle(w));
    QCOMPARE(w.outcome()->in.model.name, std::string("gpt3-175b"));
    const QString gui = dir.path() + "/gui.html";
    const QString cli = dir.path() + "/cli.html";
    QSignalSpy saved(&w, &MainWindow::report_saved);
    QSignalSpy failed(&w, &MainWindow::action_failed);
    w.save_report(gui);
    QVERIFY(saved.wait(wait_ms(120000)));
    QCOMPARE(failed.count(), 0);
    const CliRun r = run_cli({"report", "--model", "gpt3-175b", "--gpus", "512", "--global-batch",
                              "1536", "--price", "2", "--out", cli});
    QCOMPARE(r.code, 0);
    const QByteArray html = slurp(gui);
    QVERIFY(html.startsWith("<!DOCTYPE html>"));
    QCOMPARE(html, slurp(cli));
  }

  void session_round_trip_and_a_broken_session() {
    QTemporaryDir dir;
    const QString path = dir.path() + "/session.json";
    MainWindow w;
    w.show();
    find<QComboBox>(w, "cluster")->setCurrentText("azure-ndv4");
    type_into(find<QLineEdit>(w, "gpus"), "1120");
    type_into(find<QLineEdit>(w, "force_pp"), "35");
    QVERIFY(wait_idle(w));
    QCOMPARE(w.outcome()->in.cluster.name, std::string("azure-ndv4"));
    QCOMPARE(w.outcome()->search.plans.front().plan.pp, int64_t{35});
    w.save_session(path);

    MainWindow w2;
    w2.show();
    QVERIFY(wait_idle(w2));
    w2.open_session(path);
    QVERIFY(w2.inputs_panel()->inputs() == w.inputs_panel()->inputs());
    QVERIFY(wait_idle(w2));
    QCOMPARE(w2.outcome()->in.cluster.name, std::string("azure-ndv4"));
    QVERIFY(table_values(w2) == table_values(w));
    QCOMPARE(w2.inputs_panel()->error_text(), w.inputs_panel()->error_text());

    // Unknown key: refused, naming the file and the key; the window keeps its inputs.
    const QString bad = dir.path() + "/bad_session.json";
    nlohmann::json j = nlohmann::json::parse(slurp(path).toStdString());
    j["gpu_count"] = "8";
    write_file_atomic(bad.toStdString(), j.dump());
    const WhatIfInputs before = w2.inputs_panel()->inputs();
    try {
      w2.open_session(bad);
      QFAIL("a session with an unknown key was accepted");
    } catch (const InputError& e) {
      QCOMPARE(QString::fromStdString(e.source()), bad);
      QCOMPARE(QString::fromStdString(e.path()), QString("$.gpu_count"));
    }
    QVERIFY(w2.inputs_panel()->inputs() == before);
  }
};

QTEST_MAIN(TestActions)
#include "test_gui_actions.moc"
