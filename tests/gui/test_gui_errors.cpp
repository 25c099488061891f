// Bad input is marked at its field with the message `parallax plan` prints for the same value, and
// the last good answer stays: the same table, the same outcome. Fixing the field clears the mark.
#include <QCheckBox>
#include <QComboBox>
#include <QTemporaryDir>

#include "gui_test_util.hpp"
#include "inputs_panel.hpp"
#include "parallax/core/atomic_file.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/spec_json.hpp"

using namespace parallax;
using namespace parallax::gui;
using namespace parallax::gui::test;

class TestErrors : public QObject {
  Q_OBJECT

  // Applies `edit`, waits for the error, and checks the message, the marked field and that the
  // answer on screen did not change.
  void expect_error(MainWindow& w, const std::function<void()>& edit, const QString& field,
                    const QString& cli_message) {
    QVERIFY(wait_idle(w));
    const auto good = w.outcome();
    const auto table = table_values(w);
    QSignalSpy failed(&w, &MainWindow::plan_failed);
    edit();
    QVERIFY(failed.count() > 0 || failed.wait(wait_ms(30000)));
    QVERIFY(wait_idle(w));
    const QString shown = w.inputs_panel()->error_text();
    QCOMPARE(shown, cli_message);
    QCOMPARE(failed.last().at(0).toString(), cli_message);
    QWidget* marked = find<QWidget>(w, field.toUtf8().constData());
    QCOMPARE(marked->property("inputError").toString(), cli_message);
    QCOMPARE(marked->toolTip(), cli_message);
    QVERIFY(w.outcome() == good);       // the last good answer is kept ...
    QVERIFY(table_values(w) == table);  // ... and still on screen
  }

  void expect_recovery(MainWindow& w, const std::function<void()>& fix, const QString& field) {
    QSignalSpy planned(&w, &MainWindow::planned);
    fix();
    QVERIFY(planned.count() > 0 || planned.wait(wait_ms(30000)));
    QVERIFY(w.inputs_panel()->error_text().isEmpty());
    QVERIFY(!find<QWidget>(w, field.toUtf8().constData())->property("inputError").isValid());
  }

 private slots:
  void bad_gpu_counts() {
    MainWindow w;
    w.show();
    auto* gpus = find<QLineEdit>(w, "gpus");
    expect_error(w, [&] { type_into(gpus, "abc"); }, "gpus", cli_error({"plan", "--gpus", "abc"}));
    expect_error(w, [&] { type_into(gpus, "5000"); }, "gpus", cli_error({"plan", "--gpus", "5000"}));
    // Valid as a number but no plan: the planner's own reason, as the CLI prints it.
    expect_error(w, [&] { type_into(gpus, "64"); }, "gpus", cli_error({"plan", "--gpus", "64"}));
    expect_recovery(w, [&] { type_into(gpus, "2240"); }, "gpus");
  }

  void bad_job_and_constraint_fields() {
    MainWindow w;
    w.show();
    auto* batch = find<QLineEdit>(w, "global_batch");
    expect_error(w, [&] { type_into(batch, "0"); }, "global_batch",
                 cli_error({"plan", "--global-batch", "0"}));
    expect_recovery(w, [&] { type_into(batch, "1920"); }, "global_batch");
    auto* tokens = find<QLineEdit>(w, "tokens");
    expect_error(w, [&] { type_into(tokens, "-1"); }, "tokens", cli_error({"plan", "--tokens", "-1"}));
    expect_recovery(w, [&] { type_into(tokens, "270e9"); }, "tokens");
    auto* force_tp = find<QLineEdit>(w, "force_tp");
    expect_error(w, [&] { type_into(force_tp, "0"); }, "force_tp",
                 cli_error({"plan", "--tokens", "270e9", "--force-tp", "0"}));
    expect_recovery(w, [&] { type_into(force_tp, "8"); }, "force_tp");
    // No recompute mode allowed: the CLI's message for an empty list.
    expect_error(w, [&] {
      for (const char* name : {"recompute_none", "recompute_selective", "recompute_full"}) {
        find<QCheckBox>(w, name)->setChecked(false);
      }
    }, "recompute_allowed", cli_error({"plan", "--recompute-allowed", ""}));
    expect_recovery(w, [&] { find<QCheckBox>(w, "recompute_full")->setChecked(true); },
                    "recompute_allowed");
    // A profile file that does not exist: the message names the file, as the CLI's does.
    auto* profile = find<QComboBox>(w, "profile");
    expect_error(w, [&] { profile->setEditText("/nonexistent/profile.json"); }, "profile",
                 cli_error({"plan", "--profile", "/nonexistent/profile.json"}));
    expect_recovery(w, [&] { profile->setEditText(""); }, "profile");
  }

  void bad_custom_shape_gets_the_model_file_message() {
    MainWindow w;
    w.show();
    QVERIFY(wait_idle(w));
    find<QCheckBox>(w, "custom_shape")->setChecked(true);
    QVERIFY(wait_idle(w));
    QVERIFY(w.inputs_panel()->error_text().isEmpty());  // the preset's own numbers: fine
    // The same shape as a model file for the CLI: the rule must be the same, only the file name
    // (source) differs.
    QTemporaryDir dir;
    const std::string file = (dir.path() + "/custom.json").toStdString();
    nlohmann::json m = to_json(load_model("mt-nlg-530b"));
    m["heads"] = 100;
    m.erase("kv_heads");
    write_file_atomic(file, m.dump());
    const QString cli = cli_error({"plan", "--model", QString::fromStdString(file)});
    QVERIFY(cli.startsWith(QString::fromStdString(file) + ": "));
    const QString expected = "custom model: " + cli.mid(static_cast<int>(file.size()) + 2);
    expect_error(w, [&] { type_into(find<QLineEdit>(w, "heads"), "100"); }, "heads", expected);
    expect_recovery(w, [&] { type_into(find<QLineEdit>(w, "heads"), "128"); }, "heads");
  }
};

QTEST_MAIN(TestErrors)
#include "test_gui_errors.moc"
