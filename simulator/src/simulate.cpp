// The event engine: a time-ordered queue of step completions (at most one pending per rank,
// rank_queue.hpp). Processing a completion issues the step's transfer (in time order, so the
// PP-send and PP-receive streams serve transfers first come, first served) and schedules what
// it determines: a rank's next table step starts at max(its compute stream free after its
// blocking send, its input's arrival) as soon as both are known, since nothing else can move it.
#include "parallax/simulator/simulate.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "rank_queue.hpp"

namespace parallax {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

constexpr int8_t kStepDone = 0;

class Engine {
 public:
  // `reuse`: a previous result whose buffers (ops, memory samples) are recycled.
  Engine(const SimInputs& in, const SimOptions& opt, SimResult&& reuse)
      : in_(in), opt_(opt), queue_(in.ranks.size()), res_(std::move(reuse)) {
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
    free_.assign(n, 0);
    recv_free_.assign(n, 0);
    stash_.assign(n, 0);
    step_start_.assign(n, 0);
    res_.ranks.resize(n);
    for (RankResult& rr : res_.ranks) {
      std::vector<MemorySample> memory = std::move(rr.memory);
      memory.clear();
      rr = RankResult{};
      rr.memory = std::move(memory);
    }
    res_.ops.clear();
    res_.iteration_time_s = res_.pipeline_flush_s = 0;
    res_.events = res_.steps = res_.transfers = 0;
    if (opt.record_ops) {
      const size_t steps = static_cast<size_t>(2 * stages_ * m_);
      res_.ops.reserve(3 * steps + 4 * n);
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
    while (!queue_.empty()) {  // one event per step completion
      const size_t i = queue_.top();
      // The event stays at the top while it is processed: it is no later than anything it
      // schedules, and usually the rank's next step replaces it in place (one sift-down).
      ++res_.events;
      step_done(static_cast<int64_t>(i), queue_.time(i));
      if (!running_[i]) queue_.clear(i);  // waits for an input, or done
    }
    finish();
    return std::move(res_);
  }

 private:
  size_t cell(int64_t stage, int64_t mb) const { return static_cast<size_t>(stage * m_ + mb); }

  void push(double t, int64_t rank, int8_t type) { queue_.set(static_cast<size_t>(rank), t, type); }

  void record(double start, double dur, double bytes, int64_t rank, int64_t mb, int64_t chunk,
              SimStream s, SimOpKind k, int64_t peer = -1) {
    if (!opt_.record_ops) return;
    res_.ops.push_back({start, dur, bytes, static_cast<int32_t>(rank), static_cast<int32_t>(mb),
                        static_cast<int32_t>(chunk), static_cast<int32_t>(peer), s, k});
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
    if (ready == kNever) return;  // not sent yet: the transfer calls again
    // A blocking receive holds the compute stream for the transfer after its previous work.
    const bool remote = fwd ? v > 0 : v + 1 < stages_;
    const double receive = in_.p2p_receive_blocks && remote ? in_.p2p_s : 0;
    now = std::max({now, free_[i] + receive, ready});
    const RankCosts& rc = in_.ranks[i];
    // The step's streams one after the other (kStepOps): the exposed ZeRO-2/3 gathers it waits
    // for, its compute, then what of its TP time, ring sends and all-to-alls the compute does not
    // hide (iteration_costs), each holding the step up. Only the compute is drawn when empty.
    const Pass pass = fwd ? Pass::forward : Pass::backward;
    double t = now, busy = 0;
    for (size_t k = 0; k < kStepOps.size(); ++k) {
      const auto stream = static_cast<StepStream>(k);
      const StepCost& c = rc.at(pass, stream);
      if (stream == StepStream::compute) {
        now = t;  // the step starts with its compute
      } else if (!(c.s > 0)) {
        continue;
      }
      record(t, c.s, c.bytes, r, s.micro_batch, s.chunk, kStepOps[k].stream,
             kStepOps[k].kinds[static_cast<size_t>(pass)]);
      t += c.s;
      busy += c.s;
    }
    if (fwd) {
      stash_[i] += rc.chunk_activation_bytes;
      sample_memory(r, now);
    }
    running_[i] = 1;
    step_start_[i] = now;
    res_.ranks[i].steps_s += busy;
    ++res_.steps;
    push(t, r, kStepDone);
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
    // One op per transfer, on the sender's PP-send stream; its peer's PP-receive stream holds
    // the same interval (trace writers draw both).
    record(start, in_.p2p_s, in_.p2p_bytes, from_rank, mb, chunk, SimStream::pp_send,
           activation ? SimOpKind::send_activation : SimOpKind::send_gradient, to_rank);
    (activation ? act_ready_ : grad_ready_)[cell(to_stage, mb)] = end;
    try_start(to_rank, now);  // schedules its next step if it waits for this input
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
    free_[i] = free_at;  // the compute stream waits for the exposed share of the send
    running_[i] = 0;
    try_start(r, now);
  }

  // Gradient buckets on the DP stream: the share iteration_costs found hidden (dp_hidden_s, under
  // the last micro-batch's backward: its vpp chunk steps) runs before the last backward ends,
  // never before that micro-batch's backward can have started; the rest after it; then the
  // tied-embedding all-reduce; the optimizer step follows on the compute stream.
  void reduce_and_step(int64_t r, double last_start, double last_end) {
    const size_t i = static_cast<size_t>(r);
    const RankCosts& rc = in_.ranks[i];
    const double work = rc.dp_s + rc.embedding_sync_s;
    const double under = static_cast<double>(in_.table.vpp) * (last_end - last_start);
    const double hidden = std::clamp(rc.dp_hidden_s, 0.0, std::min({work, under, last_end}));
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
  std::vector<double> send_free_, recv_free_, free_, stash_, step_start_;
  detail::RankQueue queue_;
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
    case SimStream::cp:
      return "cp ring";
    case SimStream::ep:
      return "ep all-to-all";
  }
  return "?";
}

const char* to_string(SimOpKind k) { return kSimOpKinds[static_cast<size_t>(k)].name; }

SimResult simulate(const SimInputs& in, const SimOptions& opt) {
  return Engine(in, opt, SimResult{}).run();
}

void simulate_into(const SimInputs& in, const SimOptions& opt, SimResult& out) {
  out = Engine(in, opt, std::move(out)).run();
}

}  // namespace parallax
