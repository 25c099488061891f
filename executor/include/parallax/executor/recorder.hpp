#pragma once
// Every op and every communication of a rank, timed by the wall clock: aggregated per op (for
// measurements.json) and as events (for the Chrome trace, same shape as the simulator's).
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace parallax::exec {

// Streams (Chrome trace tids) numbered and named as the simulator's (simulator/simulate.hpp), so
// a measured and a simulated trace line up: 0 compute, 1 tp comm, 2 pp send, 3 pp recv, 4 dp comm.
enum class Stream { compute, tp, pp_send, pp_recv, dp, optimizer };
const char* to_string(Stream s);

struct OpEvent {
  std::string name;
  Stream stream = Stream::compute;
  double start_s = 0;
  double duration_s = 0;
  int64_t micro_batch = -1;  // schedule steps ("F 3", "B 3") carry their micro-batch and chunk
  int64_t chunk = -1;
};

struct OpStats {
  Stream stream = Stream::compute;
  std::string shape;  // e.g. "256x128x384" (M x K x N) or "bytes=..."
  std::string group;  // communication group ("tp", "dp", ...), empty for compute
  int64_t calls = 0;
  double total_s = 0;
  double flops = 0;  // total over calls
  double bytes = 0;  // total over calls (communication payload)
};

class Recorder {
 public:
  using Clock = std::chrono::steady_clock;
  Recorder() : origin_(Clock::now()) {}

  double now_s() const { return std::chrono::duration<double>(Clock::now() - origin_).count(); }

  void add(const std::string& name, Stream stream, double start_s, double end_s, double flops,
           double bytes, const std::string& shape, const std::string& group = "");

  template <class F>
  void time(const std::string& name, double flops, const std::string& shape, F&& f) {
    const double t0 = now_s();
    f();
    add(name, Stream::compute, t0, now_s(), flops, 0, shape);
  }

  // A trace-only span (not aggregated into the per-op stats): one schedule step.
  void span(const std::string& name, double start_s, double end_s, int64_t micro_batch,
            int64_t chunk) {
    if (keep_events) events_.push_back({name, Stream::compute, start_s, end_s - start_s, micro_batch, chunk});
  }

  const std::map<std::string, OpStats>& stats() const { return stats_; }
  const std::vector<OpEvent>& events() const { return events_; }
  void clear_stats() { stats_.clear(); }
  bool keep_events = true;

 private:
  Clock::time_point origin_;
  std::map<std::string, OpStats> stats_;
  std::vector<OpEvent> events_;
};

}  // namespace parallax::exec
