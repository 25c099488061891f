#pragma once
// JSON <-> spec structs. Readers are strict (see json_reader.hpp); writers emit every field so
// that a written file reads back to the same struct.
#include <nlohmann/json.hpp>

#include "parallax/core/cluster_spec.hpp"
#include "parallax/core/gpu_spec.hpp"
#include "parallax/core/job_spec.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"
#include "parallax/core/stack_spec.hpp"

namespace parallax {

// Absurdity bounds: values beyond these are input errors, not plans (e.g. 1e30 GPUs).
struct Limits {
  static constexpr int64_t max_layers = 100000;
  static constexpr int64_t max_hidden = 1 << 20;
  static constexpr int64_t max_heads = 1 << 16;
  static constexpr int64_t max_seq_len = 1 << 24;
  static constexpr int64_t max_vocab = 1 << 24;
  static constexpr int64_t max_gpus = 10000000;  // 10^7
  static constexpr int64_t max_gpus_per_node = 1024;
  static constexpr int64_t max_global_batch = 1LL << 30;
  static constexpr double max_flops_per_s = 1e18;
  static constexpr double max_bytes = 1e15;
  static constexpr double max_bytes_per_s = 1e15;
  static constexpr double max_tokens = 1e16;
  static constexpr double max_dropout = 0.99;
};

// Each reader rejects unknown keys of its object (call r.ignore(key) first to allow extra keys),
// applies the defaults and ranges of docs/design.md section 3, and checks rules within the object.
ModelSpec read_model(JsonObjectReader& r);
// A model's "moe" object, when r has one (m.layers already read): the mixture of experts with its
// rules; m.moe stays dense otherwise. The validation corpus reads its rows' experts with it.
void read_moe(JsonObjectReader& r, ModelSpec& m);
GpuSpec read_gpu(JsonObjectReader& r);
// The cluster's "gpu" field is a GPU preset name or an inline GPU object; names are resolved by
// the preset registry (presets.hpp).
ClusterSpec read_cluster(JsonObjectReader& r);
JobSpec read_job(JsonObjectReader& r);
StackSpec read_stack(JsonObjectReader& r);
PlanSpec read_plan(JsonObjectReader& r);
// A plan's token dispatcher at `key` (alltoall | deepep | hybridep), alltoall when r has none. The
// validation corpus reads its rows' dispatcher with it.
MoeDispatcher read_moe_dispatcher(JsonObjectReader& r, const std::string& key);
// A plan's account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split (false
// when absent) into p; the corpus rows carry them under the same keys.
void read_split_accounting(JsonObjectReader& r, PlanSpec& p);

nlohmann::json to_json(const ModelSpec& m);
nlohmann::json to_json(const GpuSpec& g);
nlohmann::json to_json(const ClusterSpec& c);
nlohmann::json to_json(const JobSpec& j);
nlohmann::json to_json(const PlanSpec& p);

// The invariants that tie a plan to a model, cluster, job and GPU count. Throws InputError with
// source and a path under "$.plan" (or "$.job", "$.gpus") naming the broken rule, e.g.
//   "$.plan.tp: heads (96) must be divisible by tp (5)".
void validate_plan(const ModelSpec& m, const ClusterSpec& c, const JobSpec& j, const PlanSpec& p,
                   int64_t gpus, const std::string& source);

}  // namespace parallax
