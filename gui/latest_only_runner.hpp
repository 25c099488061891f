#pragma once
// Runs one computation at a time on Qt's thread pool and hands its result to the GUI thread, unless
// a newer request (or cancel()) came meanwhile: then the result is dropped as stale and the newest
// request starts. Requests made while one runs replace each other, so a burst of edits costs at
// most two computations and the window never shows the answer to a question no longer asked.
#include <cstdint>
#include <functional>
#include <optional>

#include <QFutureWatcher>
#include <QObject>

namespace parallax::gui {

class LatestOnlyRunner : public QObject {
  Q_OBJECT

 public:
  using Delivery = std::function<void()>;  // runs on the GUI thread
  using Work = std::function<Delivery()>;  // runs on a worker thread; must not touch widgets

  explicit LatestOnlyRunner(QObject* parent = nullptr);
  // Waits for a running computation: its closure may refer to data its owner is about to free.
  ~LatestOnlyRunner() override;

  void submit(Work work);
  // Drops the queued request and the result of the running one.
  void cancel();
  bool busy() const { return running_; }
  int64_t dropped() const { return dropped_; }  // stale results dropped so far

 signals:
  void delivered();  // after a delivery ran

 private:
  void start(Work work);
  void on_finished();

  QFutureWatcher<Delivery> watcher_;
  std::optional<Work> pending_;
  bool running_ = false;
  uint64_t generation_ = 0;          // bumped by submit() and cancel()
  uint64_t running_generation_ = 0;  // of the computation running now
  int64_t dropped_ = 0;
};

}  // namespace parallax::gui
