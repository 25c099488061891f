#pragma once
// One pipeline rank's share of the model (its chunks, each a model stage) on one TP rank, with
// one flat allocation each for parameters, gradients and Adam m and v, carved by the size
// table. A training step walks the schedule table, then reduces gradients (tied embeddings
// across the first and last stage; DP in buckets, or reduce-scatter with ZeRO-1), clips by the
// global norm over all ranks, and applies AdamW (on the own shard, then all-gather, with ZeRO-1).
//
// Trainer is the interface run.cpp and the checkpoints use; the implementation is one template
// over the backend (executor/src/trainer_impl.hpp): cpu (fp32, BLAS, MPI) or, when built with
// PARALLAX_CUDA, cuda (bf16 weights and activations with fp32 master weights, Adam state and
// gradients; cuBLAS, our kernels, NCCL).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallax/core/plan_file.hpp"
#include "parallax/core/schedule.hpp"
#include "parallax/executor/data.hpp"
#include "parallax/executor/layers/chunk.hpp"
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

// What a backend says of itself in measurements.json.
struct BackendInfo {
  std::string executed_dtype = "fp32";  // the dtype the GEMMs ran in (compare and refits read it)
  std::string precision = "fp32 throughout";
  std::string gemm_path;
  nlohmann::json cuda;  // runtime, NCCL, device; null on the CPU backend
};

class Trainer {
 public:
  virtual ~Trainer() = default;

  // One iteration. after_reduce runs once the gradients are reduced (before clipping).
  virtual StepResult step(const std::function<void()>& after_reduce = {}) = 0;

  // All tensors this rank holds (every chunk), offsets into the flat buffers.
  virtual const std::vector<ParamTensor>& tensors() const = 0;
  // Host copies in fp32 (the CPU backend's training buffers themselves). A device backend
  // fills params() by pull_params(), grads() by pull_grads(), and takes params() back by
  // push_params(); checkpoints and gradient dumps call these.
  virtual std::vector<float>& params() = 0;
  virtual std::vector<float>& grads() = 0;
  virtual void pull_params() {}
  virtual void pull_grads() {}
  virtual void push_params() {}
  virtual int64_t step_count() const = 0;
  virtual void set_step_count(int64_t s) = 0;
  // ZeRO-1: after reduce-scatter only the own shard of the gradients is valid; this gathers all.
  virtual void gather_grads() = 0;
  // The full m and v in fp32 on the host (gathered over DP with ZeRO-1) / back to the own shard.
  virtual void gather_optimizer_state(std::vector<float>& m_full, std::vector<float>& v_full) = 0;
  virtual void scatter_optimizer_state(const std::vector<float>& m_full,
                                       const std::vector<float>& v_full) = 0;
  virtual int64_t numel() const = 0;
  // Keep the logits of the next steps' micro-batches (last stage; tests and the reference).
  virtual void capture_logits(bool on) = 0;
  // (m * micro_batch * seq_len, V_local) of the last captured step in fp32 (after
  // pull_grads() on a device backend); empty off the last stage.
  virtual const std::vector<float>& captured_logits() const = 0;
  virtual const Dims& last_dims() const = 0;
  // For measurements.json: the flat allocations' bytes and the backend's own figures.
  virtual nlohmann::json memory_json() const = 0;
  virtual std::string backend() const = 0;
};

// The CPU backend's trainer.
std::unique_ptr<Trainer> make_cpu_trainer(const PlanFile& plan, const TrainOptions& opt,
                                          const ProcessGroups& groups, Recorder& rec,
                                          TokenSource data);

// The schedule table the plan asks for (pp = 1 runs F0 B0 F1 B1 ... with no table needed).
ScheduleTable plan_schedule(const PlanSpec& p);

}  // namespace parallax::exec
