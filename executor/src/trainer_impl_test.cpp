// The CUDA backend's pipeline choreography, checked without a GPU: the real trainer template
// (trainer_impl.hpp beside this file, a private header, hence the test here: its schedule walk, stash pool, stash reuse waits, p2p calls)
// runs over a recording backend whose Comm follows the CUDA backend's ordering rules
// (backend_cuda.cpp, CudaComm): a collective or p2p stream waits for the compute stream's
// work so far; a receive also waits for the last send from its buffer (a stash event) and is
// followed by the compute stream waiting for it; a send records that stash event; the compute
// stream waits for a stash's forward send before reusing it (and, on the last chunk, for its
// backward send before the backward); one stream per (direction, peer) channel; wait_sends
// joins the send streams. Every pipeline
// rank's step is recorded (the host never blocks inside a step), then played on a model
// device where a send and its receive complete only together (NCCL's worst case: no
// buffering). The test fails on a deadlock, and when a channel's n-th send and n-th receive
// are different messages (NCCL matches a peer's messages in order).
#include <catch2/catch.hpp>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "parallax/core/param_table.hpp"
#include "parallax/core/schedule.hpp"
#include "spec_builders.hpp"
#include "trainer_impl.hpp"

using namespace parallax;
using namespace parallax::exec;

namespace {

// ---- the model device ----

struct SimOp {
  enum Kind { record, wait, send, recv } kind;
  int occurrence = -1;  // record / wait
  int channel = -1;     // send / recv
  int tag = -1;
};

struct SimWorld {
  std::vector<std::vector<SimOp>> streams;
  std::vector<std::string> names;
  std::vector<bool> done;  // event occurrences
  std::map<int, int> recv_stream_of_channel;

  int stream(const std::string& name) {
    streams.emplace_back();
    names.push_back(name);
    return static_cast<int>(streams.size()) - 1;
  }
  int occurrence() {
    done.push_back(false);
    return static_cast<int>(done.size()) - 1;
  }
  // Plays every stream; returns "" or a description of the deadlock / mismatch.
  std::string play() {
    std::vector<size_t> head(streams.size(), 0);
    for (bool progress = true; progress;) {
      progress = false;
      for (size_t s = 0; s < streams.size(); ++s)
        while (head[s] < streams[s].size()) {
          const SimOp& op = streams[s][head[s]];
          if (op.kind == SimOp::record) {
            done[static_cast<size_t>(op.occurrence)] = true;
          } else if (op.kind == SimOp::wait) {
            if (!done[static_cast<size_t>(op.occurrence)]) break;
          } else if (op.kind == SimOp::send) {
            const auto r = static_cast<size_t>(recv_stream_of_channel.at(op.channel));
            if (head[r] >= streams[r].size()) break;
            const SimOp& peer = streams[r][head[r]];
            if (peer.kind != SimOp::recv || peer.channel != op.channel) break;
            if (peer.tag != op.tag)
              return "channel " + std::to_string(op.channel) + ": send of tag " +
                     std::to_string(op.tag) + " meets the receive of tag " + std::to_string(peer.tag);
            ++head[r];
          } else {
            break;  // a receive completes with its send
          }
          ++head[s];
          progress = true;
        }
    }
    std::ostringstream stuck;
    for (size_t s = 0; s < streams.size(); ++s)
      if (head[s] < streams[s].size()) {
        const SimOp& op = streams[s][head[s]];
        static const char* kinds[] = {"record", "wait", "send", "recv"};
        stuck << names[s] << " at op " << head[s] << "/" << streams[s].size() << " (" << kinds[op.kind]
              << (op.kind >= SimOp::send ? " tag " + std::to_string(op.tag) : "") << "); ";
      }
    return stuck.str().empty() ? "" : "deadlock: " + stuck.str();
  }
};

// ---- the recording backend ----

class SimComm;

class SimBackend {
 public:
  using act = float;
  using wt = float;
  template <class T>
  using Buffer = std::vector<T>;
  template <class T>
  using HostBuffer = std::vector<T>;
  using Comm = SimComm;
  struct StashSync {
    int forward_sent = -1, backward_sent = -1;
  };
  static constexpr bool kMixed = false;
  static constexpr const char* kName = "sim";
  static constexpr bool kFlashAttention = true;

  SimBackend(SimWorld& w, int rank) : world(w), compute(w.stream("rank " + std::to_string(rank) + " compute")) {}

  // a waits for what b has been given so far
  void order(int a, int b) {
    const int occ = world.occurrence();
    world.streams[static_cast<size_t>(b)].push_back({SimOp::record, occ, -1, -1});
    world.streams[static_cast<size_t>(a)].push_back({SimOp::wait, occ, -1, -1});
  }
  void wait_sent(StashSync& s, P2PDir dir) { wait_on(compute, dir == P2PDir::forward ? s.forward_sent : s.backward_sent); }
  void wait_on(int stream, int occ) {
    if (occ >= 0) world.streams[static_cast<size_t>(stream)].push_back({SimOp::wait, occ, -1, -1});
  }

  template <class T>
  Buffer<T> alloc(int64_t n) const {
    return Buffer<T>(static_cast<size_t>(n), T{});
  }
  template <class T>
  HostBuffer<T> host_alloc(int64_t n) const {
    return alloc<T>(n);
  }
  template <class F>
  void time(const std::string&, double, const std::string&, F&& f, Stream = Stream::compute) {
    f();
  }
  using Mark = int;
  Mark mark() { return 0; }
  void span(const std::string&, Mark, int64_t, int64_t) {}
  double begin_step() { return 0; }
  double finish_step() { return 0; }
  double* scalar(int i) { return &scalars_[i]; }
  void zero_scalar(double* s) { *s = 0; }
  double read_scalar(const double* s) const { return *s; }
  void reserve_attention(int64_t, int64_t, int64_t) {}

  // Every op: nothing to compute (only the streams' ordering is being checked).
#define PX_SIM_NOOP(name) \
  template <class... A>   \
  void name(A&&...) {}
  PX_SIM_NOOP(upload) PX_SIM_NOOP(zero) PX_SIM_NOOP(copy) PX_SIM_NOOP(matmul_forward)
  PX_SIM_NOOP(matmul_backward) PX_SIM_NOOP(bias_forward) PX_SIM_NOOP(bias_backward)
  PX_SIM_NOOP(residual_forward) PX_SIM_NOOP(layernorm_forward) PX_SIM_NOOP(layernorm_backward)
  PX_SIM_NOOP(rmsnorm_forward) PX_SIM_NOOP(rmsnorm_backward) PX_SIM_NOOP(attention_forward)
  PX_SIM_NOOP(attention_backward) PX_SIM_NOOP(flash_attention_forward)
  PX_SIM_NOOP(flash_attention_backward) PX_SIM_NOOP(flash_attention_rows_forward)
  PX_SIM_NOOP(flash_attention_rows_backward) PX_SIM_NOOP(rope_forward) PX_SIM_NOOP(rope_backward)
  PX_SIM_NOOP(gelu_forward) PX_SIM_NOOP(gelu_backward)
  PX_SIM_NOOP(swiglu_forward) PX_SIM_NOOP(swiglu_backward) PX_SIM_NOOP(embedding_forward)
  PX_SIM_NOOP(embedding_backward) PX_SIM_NOOP(position_forward_rows)
  PX_SIM_NOOP(position_backward_rows) PX_SIM_NOOP(crossentropy_local_max)
  PX_SIM_NOOP(crossentropy_local_sums) PX_SIM_NOOP(crossentropy_finish) PX_SIM_NOOP(add_loss)
  PX_SIM_NOOP(tied_sum) PX_SIM_NOOP(sum_squares_add) PX_SIM_NOOP(clip) PX_SIM_NOOP(adamw)
#undef PX_SIM_NOOP

  struct Params {
    Buffer<float> params, grads, m, v;
    wt* working() { return params.data(); }
  };
  Params make_params(int64_t padded, int64_t shard) const {
    return {alloc<float>(padded), alloc<float>(padded), alloc<float>(shard), alloc<float>(shard)};
  }
  nlohmann::json params_bytes_json(const Params&) const { return nlohmann::json::object(); }
  nlohmann::json memory_json() const { return nlohmann::json::object(); }

  SimWorld& world;
  int compute;

 private:
  double scalars_[2] = {0, 0};
};

// CudaComm's rules (backend_cuda.cpp) on the model device. shared_stream: the design this
// replaced, every pipeline message on one stream (one communicator) per rank.
class SimComm {
 public:
  SimComm(SimBackend& be, int pp_rank, bool shared_stream)
      : be_(be), me_(pp_rank), shared_(shared_stream) {}

  template <class... A>
  void all_reduce_sum(A&&...) {}
  template <class... A>
  void all_reduce_max(A&&...) {}
  template <class... A>
  void reduce_scatter_sum(A&&...) {}
  template <class... A>
  void all_gather(A&&...) {}
  void all_reduce_scalar(double*, const Group&) {}

  void send(const float*, int64_t, int dest, int tag, const Group&, const std::string&, P2PDir dir,
            SimBackend::StashSync* sync) {
    const int ch = channel_id(me_, dir);
    const int s = my_stream(ch, true, dest);
    be_.order(s, be_.compute);
    be_.world.streams[static_cast<size_t>(s)].push_back({SimOp::send, -1, ch, tag});
    if (sync) {
      const int occ = be_.world.occurrence();
      be_.world.streams[static_cast<size_t>(s)].push_back({SimOp::record, occ, -1, -1});
      (dir == P2PDir::forward ? sync->forward_sent : sync->backward_sent) = occ;
    }
  }
  void recv(float*, int64_t, int src, int tag, const Group&, const std::string&, P2PDir dir,
            const SimBackend::StashSync* sync) {
    const int ch = channel_id(src, dir);
    const int s = my_stream(ch, false, src);
    be_.order(s, be_.compute);
    if (sync) be_.wait_on(s, dir == P2PDir::forward ? sync->forward_sent : sync->backward_sent);
    be_.world.streams[static_cast<size_t>(s)].push_back({SimOp::recv, -1, ch, tag});
    be_.world.recv_stream_of_channel[ch] = s;
    be_.order(be_.compute, s);
  }
  void wait_sends() {
    for (const auto& [key, s] : streams_)
      if (key.second) be_.order(be_.compute, s);
  }

 private:
  static int channel_id(int sender, P2PDir dir) { return 2 * sender + (dir == P2PDir::forward ? 0 : 1); }
  int my_stream(int ch, bool sending, int peer) {
    if (shared_) {
      if (streams_.empty())
        streams_[{-1, true}] = be_.world.stream("rank " + std::to_string(me_) + " pipeline");
      return streams_.begin()->second;
    }
    auto it = streams_.find({ch, sending});
    if (it == streams_.end())
      it = streams_.emplace(std::make_pair(ch, sending),
                            be_.world.stream("rank " + std::to_string(me_) + (sending ? " send to " : " recv from ") +
                                             std::to_string(peer) + " ch " + std::to_string(ch))).first;
    return it->second;
  }

  SimBackend& be_;
  int me_;
  bool shared_;
  std::map<std::pair<int, bool>, int> streams_;
};

ModelSpec tiny(int64_t layers) { return test::gpt_shape("tiny", layers, 8, 2, 16, 4, 16); }

// Records one step of every pipeline rank, then plays them.
std::string play_step(int64_t pp, int64_t vpp, int64_t m, Schedule schedule, bool shared_stream,
                      int64_t group = 0) {
  PlanFile pf;
  pf.model = tiny(pp * vpp * 2);
  pf.plan.pp = pp;
  pf.plan.vpp = vpp;
  pf.plan.num_micro_batches = m;
  pf.plan.schedule = schedule;
  pf.plan.microbatch_group = group;
  pf.plan.recompute = Recompute::none;
  SimWorld world;
  std::vector<ProcessGroups> groups(static_cast<size_t>(pp));
  std::vector<std::unique_ptr<SimBackend>> be;
  std::vector<std::unique_ptr<SimComm>> comm;
  std::vector<std::unique_ptr<TrainerImpl<SimBackend>>> trainers;
  for (int64_t r = 0; r < pp; ++r) {
    ProcessGroups& g = groups[static_cast<size_t>(r)];
    g.coords.pp = r;
    g.pp = {MPI_COMM_NULL, static_cast<int>(r), static_cast<int>(pp), "pp"};
    g.world = {MPI_COMM_NULL, static_cast<int>(r), static_cast<int>(pp), "world"};
    be.push_back(std::make_unique<SimBackend>(world, static_cast<int>(r)));
    comm.push_back(std::make_unique<SimComm>(*be.back(), static_cast<int>(r), shared_stream));
    trainers.push_back(std::make_unique<TrainerImpl<SimBackend>>(
        *be.back(), *comm.back(), pf, TrainOptions{}, g, TokenSource(1, pf.model.vocab)));
  }
  for (auto& t : trainers) t->step({});
  return world.play();
}

const char* name(Schedule s) {
  return s == Schedule::gpipe ? "gpipe" : s == Schedule::one_f_one_b ? "1f1b" : "interleaved";
}

}  // namespace

TEST_CASE("CUDA pipeline streams: every schedule completes and each channel stays in order",
          "[executor][cuda-model]") {
  int cases = 0;
  for (int64_t pp : {2, 3, 4})
    for (int64_t m : {1, 2, 3, 4, 5, 8})
      for (auto [s, vpp] : std::vector<std::pair<Schedule, int64_t>>{
               {Schedule::gpipe, 1}, {Schedule::one_f_one_b, 1}, {Schedule::interleaved, 2},
               {Schedule::interleaved, 3}}) {
        // Interleaving with m % pp != 0 runs in Megatron-Core's larger micro-batch groups.
        const int64_t group =
            s == Schedule::interleaved && m % pp != 0 ? smallest_microbatch_group(pp, m) : 0;
        if (s == Schedule::interleaved && m % pp != 0 && group == 0) continue;  // m < pp
        INFO(name(s) << " pp " << pp << " vpp " << vpp << " m " << m << " group " << group);
        const std::string r = play_step(pp, vpp, m, s, false, group);
        INFO(r);
        CHECK(r.empty());
        ++cases;
      }
  CHECK(cases == 60);  // 48 without groups, 12 more with them
}

TEST_CASE("CUDA pipeline streams: one shared pipeline stream would deadlock (the model has teeth)",
          "[executor][cuda-model]") {
  // 1F1B with pp 2: rank 0 sends F(1) then receives B(0); rank 1 sends B(0) then receives F(1).
  // With both directions on one stream per rank and no buffering, each send waits for a
  // receive queued behind the other rank's send.
  const std::string r = play_step(2, 1, 4, Schedule::one_f_one_b, true);
  INFO(r);
  CHECK(r.rfind("deadlock", 0) == 0);
}
