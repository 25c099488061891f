#pragma once
// One pipeline rank's share of the model (its chunks, each a model stage) on one TP rank, with
// one flat allocation each for parameters, gradients and Adam m and v, carved by the size
// table. A training step walks the schedule table, then reduces gradients (tied embeddings
// across the first and last stage; DP in buckets, or reduce-scatter with ZeRO-1), clips by the
// global norm over all ranks, and applies AdamW (on the own shard, then all-gather, with ZeRO-1).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "parallax/core/plan_file.hpp"
#include "parallax/core/schedule.hpp"
#include "parallax/executor/chunk.hpp"
#include "parallax/executor/data.hpp"
#include "parallax/kernels/math.hpp"

namespace parallax::exec {

struct TrainOptions {
  uint64_t seed = 1234;
  float grad_clip = 1.0f;  // global L2 norm; 0 = off
  kernels::AdamW adam;
  int64_t dp_bucket_floats = 1 << 20;  // 4 MB buckets
};

struct StepResult {
  double loss = 0;
  double grad_norm = 0;
  double time_s = 0;
};

class Trainer {
 public:
  Trainer(const PlanFile& plan, const TrainOptions& opt, const ProcessGroups& groups,
          Comm& comm, Recorder& rec, TokenSource data);

  // One iteration. after_reduce runs once the gradients are reduced (before clipping).
  StepResult step(const std::function<void()>& after_reduce = {});

  // All tensors this rank holds (every chunk), offsets into the flat buffers.
  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  std::vector<float>& params() { return params_; }
  std::vector<float>& grads() { return grads_; }
  std::vector<float>& adam_m() { return m_; }
  std::vector<float>& adam_v() { return v_; }
  int64_t step_count() const { return step_; }
  void set_step_count(int64_t s) { step_ = s; }
  // With ZeRO-1 the optimizer state covers [shard_begin, shard_end) of the flat buffer.
  int64_t shard_begin() const { return shard_begin_; }
  int64_t shard_end() const { return shard_end_; }
  bool zero1() const { return zero1_; }
  // ZeRO-1: after reduce-scatter only the own shard of the gradients is valid; this gathers all.
  void gather_grads();
  // ZeRO-1: gathers the full m and v (for checkpoints) / keeps only the own shard again.
  void gather_optimizer_state(std::vector<float>& m_full, std::vector<float>& v_full);
  void scatter_optimizer_state(const std::vector<float>& m_full, const std::vector<float>& v_full);
  int64_t numel() const { return numel_; }
  const ScheduleTable& schedule() const { return schedule_; }
  // Keep the logits of the next steps' micro-batches (last stage; tests and the reference).
  void capture_logits(bool on) { capture_logits_ = on; }
  // (m * micro_batch * seq_len, V_local) of the last captured step; empty off the last stage.
  const std::vector<float>& captured_logits() const { return logits_; }
  const Chunk& last_chunk() const { return *chunks_.back(); }

 private:
  double run_schedule();
  void reduce_gradients();
  double clip_gradients();
  void optimizer_step();
  void load_micro_batch(Stash& s, int64_t mb);
  void init_parameters();

  PlanFile pf_;
  TrainOptions opt_;
  const ProcessGroups& g_;
  Comm& comm_;
  Recorder& rec_;
  TokenSource data_;
  ScheduleTable schedule_;
  std::vector<std::unique_ptr<Chunk>> chunks_;
  std::vector<ParamTensor> tensors_;
  int64_t numel_ = 0, padded_ = 0;
  bool zero1_ = false;
  int64_t shard_begin_ = 0, shard_end_ = 0;
  std::vector<float> params_, grads_, m_, v_;
  // Stash pools per chunk: free stashes and the one of each in-flight micro-batch.
  std::vector<std::vector<std::unique_ptr<Stash>>> free_;
  std::vector<std::vector<std::unique_ptr<Stash>>> live_;
  std::vector<float> dres_;
  int64_t step_ = 0;
  bool capture_logits_ = false;
  std::vector<float> logits_;
};

// The schedule table the plan asks for (pp = 1 runs F0 B0 F1 B1 ... with no table needed).
ScheduleTable plan_schedule(const PlanSpec& p);

}  // namespace parallax::exec
