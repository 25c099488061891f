// The event engine: a time-ordered queue of step completions and transfer arrivals. Each rank
// starts its next table step as soon as its compute stream is free and the step's input (the
// previous stage's activation or the next stage's gradient) has arrived; a transfer occupies the
// sender's PP-send and the receiver's PP-receive stream.
#include "parallax/simulator/simulate.hpp"

#include <algorithm>
#include <limits>
#include <queue>
#include <stdexcept>

namespace parallax {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

struct Event {
  double time_s;
  int64_t seq;     // ties run in the order they were queued
  int32_t target;  // rank (step done) or stage * m + micro_batch (arrival)
  int8_t type;     // 0 step done, 1 activation arrived, 2 gradient arrived, 3 rank free
  bool operator>(const Event& o) const {
    return time_s > o.time_s || (time_s == o.time_s && seq > o.seq);
  }
};

class Engine {
 public:
  Engine(const SimInputs& in, const SimOptions& opt) : in_(in), opt_(opt) {
    const ScheduleTable& t = in.table;
    if (static_cast<int64_t>(in.ranks.size()) != t.pp) {
      throw std::invalid_argument("simulate: costs for " + std::to_string(in.ranks.size()) +
                                  " ranks, schedule has pp " + std::to_string(t.pp));
    }
    pp_ = t.pp;
    m_ = t.num_micro_batches;
    stages_ = t.pp * t.vpp;
    const size_t cells = static_cast<size_t>(stages_ * m_);
    act_ready_.assign(cells, kNever);
    grad_ready_.assign(cells, kNever);
    for (int64_t mb = 0; mb < m_; ++mb) {
      act_ready_[cell(0, mb)] = 0;
      grad_ready_[cell(stages_ - 1, mb)] = 0;  // the loss is local; F before B is the table's
    }
    const size_t n = static_cast<size_t>(pp_);
    next_.assign(n, 0);
    running_.assign(n, 0);
    send_free_.assign(n, 0);
    recv_free_.assign(n, 0);
    stash_.assign(n, 0);
    step_start_.assign(n, 0);
    res_.ranks.resize(n);
    std::vector<Event> storage;
    storage.reserve(static_cast<size_t>(4 * pp_));
    queue_ = Queue(std::greater<Event>(), std::move(storage));
    if (opt.record_ops) {
      const size_t steps = static_cast<size_t>(2 * stages_ * m_);
      res_.ops.reserve(4 * steps + 4 * n);
    }
    for (int64_t r = 0; r < pp_; ++r) {
      RankResult& rr = res_.ranks[static_cast<size_t>(r)];
      if (opt.record_memory) {
        rr.memory.reserve(static_cast<size_t>(4 * t.vpp * m_ + 2));
        rr.memory.push_back({0, in.ranks[static_cast<size_t>(r)].static_bytes});
      }
    }
  }

  SimResult run() {
    for (int64_t r = 0; r < pp_; ++r) try_start(r, 0);
    while (!queue_.empty()) {
      const Event e = queue_.top();
      queue_.pop();
      ++res_.events;
      if (e.type == 0) {
        step_done(e.target, e.time_s);
      } else if (e.type == 3) {
        running_[static_cast<size_t>(e.target)] = 0;
        try_start(e.target, e.time_s);
      } else {
        const int64_t stage = e.target / m_;
        const size_t c = static_cast<size_t>(e.target);
        if (e.type == 1)
          act_ready_[c] = e.time_s;
        else
          grad_ready_[c] = e.time_s;
        try_start(stage % pp_, e.time_s);
      }
    }
    finish();
    return std::move(res_);
  }

 private:
  using Queue = std::priority_queue<Event, std::vector<Event>, std::greater<Event>>;

  size_t cell(int64_t stage, int64_t mb) const { return static_cast<size_t>(stage * m_ + mb); }

  void push(double t, int32_t target, int8_t type) { queue_.push({t, seq_++, target, type}); }

  void record(double start, double dur, double bytes, int64_t rank, int64_t mb, int64_t chunk,
              SimStream s, SimOpKind k) {
    if (!opt_.record_ops) return;
    res_.ops.push_back({start, dur, bytes, static_cast<int32_t>(rank), static_cast<int32_t>(mb),
                        static_cast<int32_t>(chunk), s, k});
  }

  void sample_memory(int64_t r, double t) {
    const size_t i = static_cast<size_t>(r);
    RankResult& rr = res_.ranks[i];
    rr.peak_activation_bytes = std::max(rr.peak_activation_bytes, stash_[i]);
    if (opt_.record_memory) rr.memory.push_back({t, in_.ranks[i].static_bytes + stash_[i]});
  }

  void try_start(int64_t r, double now) {
    const size_t i = static_cast<size_t>(r);
    const std::vector<ScheduleStep>& steps = in_.table.ranks[i];
    if (running_[i] || next_[i] >= steps.size()) return;
    const ScheduleStep& s = steps[next_[i]];
    const int64_t v = virtual_stage(pp_, r, s.chunk);
    const bool fwd = s.kind == StepKind::forward;
    const double ready =
        fwd ? act_ready_[cell(v, s.micro_batch)] : grad_ready_[cell(v, s.micro_batch)];
    if (ready > now) return;  // its input arrives later (an arrival event will call again)
    const RankCosts& rc = in_.ranks[i];
    const double compute = fwd ? rc.forward_s : rc.backward_s;
    const double tp = fwd ? rc.forward_tp_s : rc.backward_tp_s;
    record(now, compute, 0, r, s.micro_batch, s.chunk, SimStream::compute,
           fwd ? SimOpKind::forward : SimOpKind::backward);
    if (tp > 0) {
      record(now + compute, tp, 0, r, s.micro_batch, s.chunk, SimStream::tp,
             fwd ? SimOpKind::tp_forward : SimOpKind::tp_backward);
    }
    if (fwd) {
      stash_[i] += rc.chunk_activation_bytes;
      sample_memory(r, now);
    }
    running_[i] = 1;
    step_start_[i] = now;
    res_.ranks[i].steps_s += compute + tp;
    ++res_.steps;
    push(now + compute + tp, static_cast<int32_t>(r), 0);
  }

  // Returns when the sender's compute stream is released (the exposed share of the transfer).
  double transfer(int64_t from_rank, int64_t to_stage, int64_t mb, int64_t chunk, bool activation,
                  double now) {
    const int64_t to_rank = to_stage % pp_;
    const size_t a = static_cast<size_t>(from_rank), b = static_cast<size_t>(to_rank);
    const double start = std::max({now, send_free_[a], recv_free_[b]});
    const double end = start + in_.p2p_s;
    send_free_[a] = end;
    recv_free_[b] = end;
    ++res_.transfers;
    record(start, in_.p2p_s, in_.p2p_bytes, from_rank, mb, chunk, SimStream::pp_send,
           activation ? SimOpKind::send_activation : SimOpKind::send_gradient);
    record(start, in_.p2p_s, in_.p2p_bytes, to_rank, mb, to_stage / pp_, SimStream::pp_recv,
           activation ? SimOpKind::recv_activation : SimOpKind::recv_gradient);
    push(end, static_cast<int32_t>(cell(to_stage, mb)), activation ? 1 : 2);
    return in_.p2p_exposed_fraction >= 1 ? end : start + in_.p2p_exposed_fraction * in_.p2p_s;
  }

  void step_done(int64_t r, double now) {
    const size_t i = static_cast<size_t>(r);
    const ScheduleStep& s = in_.table.ranks[i][next_[i]];
    const int64_t v = virtual_stage(pp_, r, s.chunk);
    ++next_[i];
    double free_at = now;
    if (s.kind == StepKind::forward) {
      if (v + 1 < stages_) free_at = transfer(r, v + 1, s.micro_batch, s.chunk, true, now);
    } else {
      stash_[i] -= in_.ranks[i].chunk_activation_bytes;
      sample_memory(r, now);
      if (v > 0) free_at = transfer(r, v - 1, s.micro_batch, s.chunk, false, now);
    }
    RankResult& rr = res_.ranks[i];
    rr.send_wait_s += free_at - now;
    if (next_[i] == in_.table.ranks[i].size()) {
      rr.last_backward_end_s = free_at;
      reduce_and_step(r, step_start_[i], free_at);
    }
    if (free_at > now) {
      push(free_at, static_cast<int32_t>(r), 3);  // still sending: the rank waits
      return;
    }
    running_[i] = 0;
    try_start(r, now);
  }

  // Gradient buckets on the DP stream: the profile's overlapped share of the reduction runs under
  // the last backward (never before it starts), the rest after it; then the tied-embedding
  // all-reduce; the optimizer step follows on the compute stream.
  void reduce_and_step(int64_t r, double last_start, double last_end) {
    const size_t i = static_cast<size_t>(r);
    const RankCosts& rc = in_.ranks[i];
    const double work = rc.dp_s + rc.embedding_sync_s;
    const double hidden = std::min((1 - in_.dp_exposed_fraction) * work, last_end - last_start);
    double t = last_end - hidden;
    if (rc.dp_s > 0) {
      const double piece = rc.dp_s / static_cast<double>(rc.dp_buckets);
      const double bytes = rc.dp_bytes / static_cast<double>(rc.dp_buckets);
      for (int64_t k = 0; k < rc.dp_buckets; ++k) {
        record(t, piece, bytes, r, -1, -1, SimStream::dp, SimOpKind::dp_bucket);
        t += piece;
      }
    }
    if (rc.embedding_sync_s > 0) {
      record(t, rc.embedding_sync_s, 0, r, -1, -1, SimStream::dp, SimOpKind::embedding_sync);
      t += rc.embedding_sync_s;
    }
    const double opt_start = std::max(t, last_end);
    record(opt_start, rc.optimizer_s, 0, r, -1, -1, SimStream::compute, SimOpKind::optimizer);
    res_.ranks[i].end_s = opt_start + rc.optimizer_s;
    res_.ranks[i].busy_s = res_.ranks[i].steps_s + rc.optimizer_s;
  }

  void finish() {
    for (size_t i = 0; i < res_.ranks.size(); ++i) {
      if (next_[i] != in_.table.ranks[i].size()) {
        throw std::logic_error("simulate: rank " + std::to_string(i) + " stalled at step " +
                               std::to_string(next_[i]) + " (schedule deadlock)");
      }
      res_.iteration_time_s = std::max(res_.iteration_time_s, res_.ranks[i].end_s);
      res_.pipeline_flush_s = std::max(res_.pipeline_flush_s, res_.ranks[i].last_backward_end_s);
    }
    const double it = res_.iteration_time_s;
    for (RankResult& rr : res_.ranks) {
      rr.idle_s = it - rr.busy_s;
      rr.bubble_s = res_.pipeline_flush_s - rr.steps_s - rr.send_wait_s;
      rr.busy_fraction = it > 0 ? rr.busy_s / it : 0;
      rr.idle_fraction = it > 0 ? rr.idle_s / it : 0;
      rr.bubble_fraction = it > 0 ? rr.bubble_s / it : 0;
      rr.bubble_ratio = rr.steps_s > 0 ? rr.bubble_s / rr.steps_s : 0;
      if (opt_.record_memory) {
        rr.memory.push_back({rr.end_s, rr.memory.back().bytes});
      }
    }
    for (size_t i = 0; i < res_.ranks.size(); ++i) {
      RankResult& rr = res_.ranks[i];
      rr.peak_bytes = in_.ranks[i].static_bytes + rr.peak_activation_bytes;
    }
  }

  const SimInputs& in_;
  const SimOptions& opt_;
  int64_t pp_ = 1, m_ = 1, stages_ = 1;
  std::vector<double> act_ready_, grad_ready_;
  std::vector<size_t> next_;
  std::vector<char> running_;
  std::vector<double> send_free_, recv_free_, stash_, step_start_;
  Queue queue_;
  int64_t seq_ = 0;
  SimResult res_;
};

}  // namespace

const char* to_string(SimStream s) {
  switch (s) {
    case SimStream::compute:
      return "compute";
    case SimStream::tp:
      return "tp comm";
    case SimStream::pp_send:
      return "pp send";
    case SimStream::pp_recv:
      return "pp recv";
    case SimStream::dp:
      return "dp comm";
  }
  return "?";
}

const char* to_string(SimOpKind k) {
  switch (k) {
    case SimOpKind::forward:
      return "F";
    case SimOpKind::backward:
      return "B";
    case SimOpKind::tp_forward:
      return "tp F";
    case SimOpKind::tp_backward:
      return "tp B";
    case SimOpKind::send_activation:
      return "send act";
    case SimOpKind::send_gradient:
      return "send grad";
    case SimOpKind::recv_activation:
      return "recv act";
    case SimOpKind::recv_gradient:
      return "recv grad";
    case SimOpKind::dp_bucket:
      return "dp bucket";
    case SimOpKind::embedding_sync:
      return "embedding sync";
    case SimOpKind::optimizer:
      return "optimizer";
  }
  return "?";
}

SimResult simulate(const SimInputs& in, const SimOptions& opt) { return Engine(in, opt).run(); }

}  // namespace parallax
