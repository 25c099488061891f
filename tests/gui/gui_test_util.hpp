#pragma once
// Shared by the GUI tests: run the real `parallax` binary (PARALLAX_BIN), type into a field the
// way a user does, wait for the window's answers, and read the plans table back.
#include <vector>

#include <QAbstractItemModel>
#include <QLineEdit>
#include <QProcess>
#include <QSignalSpy>
#include <QTableView>
#include <QTest>

#include <nlohmann/json.hpp>

#include "main_window.hpp"
#include "plans_table_model.hpp"

namespace parallax::gui::test {

struct CliRun {
  int code = -1;
  QByteArray out;
  QByteArray err;
};

inline CliRun run_cli(const QStringList& args) {
  QProcess p;
  p.start(PARALLAX_BIN, args);
  CliRun r;
  if (!p.waitForFinished(120000)) return r;
  r.code = p.exitCode();
  r.out = p.readAllStandardOutput();
  r.err = p.readAllStandardError();
  return r;
}

// The message `parallax` printed for bad input: stderr without "parallax: error: " and newline.
inline QString cli_error(const QStringList& args) {
  const CliRun r = run_cli(args);
  QString e = QString::fromUtf8(r.err).trimmed();
  const QString prefix = "parallax: error: ";
  return r.code == 2 && e.startsWith(prefix) ? e.mid(prefix.size()) : "unexpected: " + e;
}

inline nlohmann::json cli_json(const QStringList& args) {
  const CliRun r = run_cli(args);
  return nlohmann::json::parse(r.out.toStdString());
}

template <class W>
W* find(QWidget& root, const char* name) {
  W* w = root.findChild<W*>(name);
  if (!w) qFatal("no widget named %s", name);
  return w;
}

// Replaces a line edit's text by typing, as a user does (select all, then the keys).
inline void type_into(QLineEdit* e, const QString& text) {
  e->setFocus();
  e->selectAll();
  if (text.isEmpty()) {
    QTest::keyClick(e, Qt::Key_Delete);
  } else {
    QTest::keyClicks(e, text);
  }
}

// Waits until no re-plan, simulation or sweep runs or is queued.
// Waits scale with the build: under ASan + UBSan (scripts/test-sanitize) the planner behind the
// window runs 10-15x slower than in the release build.
#if defined(PARALLAX_SANITIZED)
inline constexpr int kWaitScale = 20;
#else
inline constexpr int kWaitScale = 1;
#endif
inline int wait_ms(int ms) { return ms * kWaitScale; }

inline bool wait_idle(MainWindow& w, int timeout_ms = wait_ms(60000)) {
  QTest::qWait(1);
  return QTest::qWaitFor([&] { return w.idle(); }, timeout_ms);
}

// Every cell of the plans table, as kValueRole.
inline std::vector<std::vector<QVariant>> table_values(MainWindow& w) {
  auto* view = find<QTableView>(w, "plans_table");
  const QAbstractItemModel* m = view->model();
  std::vector<std::vector<QVariant>> rows;
  for (int r = 0; r < m->rowCount(); ++r) {
    rows.emplace_back();
    for (int c = 0; c < m->columnCount(); ++c) {
      rows.back().push_back(m->data(m->index(r, c), PlansTableModel::kValueRole));
    }
  }
  return rows;
}

inline QString cell_text(MainWindow& w, int row, int column) {
  const QAbstractItemModel* m = find<QTableView>(w, "plans_table")->model();
  return m->data(m->index(row, column), Qt::DisplayRole).toString();
}

inline bool close(double a, double b, double rel = 1e-12) {
  return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b));
}

}  // namespace parallax::gui::test
