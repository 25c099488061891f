// LatestOnlyRunner: one computation at a time, a burst of requests costs at most two, and a result
// that a newer request (or cancel) made stale never reaches the GUI thread.
#include <atomic>
#include <thread>

#include <QTest>

#include "latest_only_runner.hpp"

using parallax::gui::LatestOnlyRunner;

class TestRunner : public QObject {
  Q_OBJECT

 private slots:
  void only_the_latest_request_is_delivered() {
    LatestOnlyRunner runner;
    QStringList delivered;
    std::atomic<int> computed{0};
    auto work = [&](const QString& name, int sleep_ms) {
      return [&, name, sleep_ms]() -> LatestOnlyRunner::Delivery {
        std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
        ++computed;
        return [&delivered, name] { delivered << name; };
      };
    };
    runner.submit(work("A", 200));  // starts at once
    runner.submit(work("B", 0));    // queued ...
    runner.submit(work("C", 0));    // ... and replaced
    QVERIFY(runner.busy());
    QVERIFY(QTest::qWaitFor([&] { return !runner.busy(); }, 5000));
    QCOMPARE(delivered, QStringList{"C"});
    QCOMPARE(computed.load(), 2);     // A (stale, dropped) and C; B never ran
    QCOMPARE(runner.dropped(), int64_t{1});
  }

  void a_cancelled_result_is_dropped() {
    LatestOnlyRunner runner;
    bool delivered = false;
    runner.submit([&]() -> LatestOnlyRunner::Delivery {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      return [&delivered] { delivered = true; };
    });
    runner.cancel();
    QVERIFY(QTest::qWaitFor([&] { return !runner.busy(); }, 5000));
    QTest::qWait(50);
    QVERIFY(!delivered);
    QCOMPARE(runner.dropped(), int64_t{1});
  }

  void a_result_without_newer_requests_is_delivered() {
    LatestOnlyRunner runner;
    int value = 0;
    runner.submit([&]() -> LatestOnlyRunner::Delivery { return [&value] { value = 42; }; });
    QVERIFY(QTest::qWaitFor([&] { return value == 42; }, 5000));
    QCOMPARE(runner.dropped(), int64_t{0});
  }
};

QTEST_GUILESS_MAIN(TestRunner)
#include "test_gui_runner.moc"
