#include "latest_only_runner.hpp"

#include <exception>
#include <string>

#include <QtConcurrent/QtConcurrent>
#include <QtGlobal>

namespace parallax::gui {

LatestOnlyRunner::LatestOnlyRunner(QObject* parent) : QObject(parent) {
  connect(&watcher_, &QFutureWatcher<Delivery>::finished, this, &LatestOnlyRunner::on_finished);
}

LatestOnlyRunner::~LatestOnlyRunner() { watcher_.waitForFinished(); }

void LatestOnlyRunner::submit(Work work) {
  ++generation_;
  if (running_) {
    pending_ = std::move(work);
    return;
  }
  start(std::move(work));
}

void LatestOnlyRunner::cancel() {
  ++generation_;
  pending_.reset();
}

void LatestOnlyRunner::start(Work work) {
  running_ = true;
  running_generation_ = generation_;
  watcher_.setFuture(QtConcurrent::run([w = std::move(work)]() -> Delivery {
    try {
      return w();
    } catch (const std::exception& e) {  // the work reports its expected errors itself
      const std::string what = e.what();
      return [what] { qWarning("parallax-gui: internal error: %s", what.c_str()); };
    }
  }));
}

void LatestOnlyRunner::on_finished() {
  running_ = false;
  const bool stale = running_generation_ != generation_;
  if (pending_) {
    Work next = std::move(*pending_);
    pending_.reset();
    ++dropped_;
    start(std::move(next));
    return;
  }
  if (stale) {
    ++dropped_;
    return;
  }
  const Delivery deliver = watcher_.result();
  if (deliver) deliver();
  emit delivered();
}

}  // namespace parallax::gui
