#pragma once
// Shared by every test: model shapes and plans built from the fields a test is about, the others
// the specs' own defaults, instead of a field-by-field copy in each test file.
#include <cstdint>
#include <string>

#include "parallax/core/model_spec.hpp"
#include "parallax/core/plan_spec.hpp"

namespace parallax::test {

// A GPT shape with multi-head attention (kv_heads = heads); activation, positions, norm and
// embeddings are ModelSpec's defaults (GeLU, learned, LayerNorm, tied).
inline ModelSpec gpt_shape(const std::string& name, int64_t layers, int64_t hidden, int64_t heads,
                           int64_t ffn_hidden, int64_t seq_len, int64_t vocab) {
  ModelSpec m;
  m.name = name;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.ffn_hidden = ffn_hidden;
  m.seq_len = seq_len;
  m.vocab = vocab;
  return m;
}

// A plan from its sizes; chain the setters for the fields a test varies, the rest stay PlanSpec's
// defaults (1F1B, no recompute, no SP, ZeRO 0, order tp-dp-pp).
class PlanBuilder {
 public:
  PlanBuilder(int64_t tp, int64_t pp, int64_t dp = 1) {
    p_.tp = tp;
    p_.pp = pp;
    p_.dp = dp;
  }
  // micro-batch size and micro-batches per pipeline per iteration
  PlanBuilder& batches(int64_t micro_batch, int64_t num_micro_batches) {
    p_.micro_batch = micro_batch;
    p_.num_micro_batches = num_micro_batches;
    return *this;
  }
  PlanBuilder& recompute(Recompute r, int64_t layers = 0) {
    p_.recompute = r;
    p_.recompute_layers = layers;
    return *this;
  }
  PlanBuilder& interleaved(int64_t vpp) {
    p_.vpp = vpp;
    p_.schedule = Schedule::interleaved;
    return *this;
  }
  PlanBuilder& schedule(Schedule s) {
    p_.schedule = s;
    return *this;
  }
  PlanBuilder& sequence_parallel(bool on = true) {
    p_.sequence_parallel = on;
    return *this;
  }
  PlanBuilder& zero(int64_t stage) {
    p_.zero = stage;
    return *this;
  }
  PlanBuilder& uneven(int64_t first_stage_layers, int64_t last_stage_layers) {
    p_.first_stage_layers = first_stage_layers;
    p_.last_stage_layers = last_stage_layers;
    return *this;
  }
  // Context-parallel size (the plan's GPUs become tp * cp * pp * dp).
  PlanBuilder& cp(int64_t size) {
    p_.cp = size;
    return *this;
  }
  // Expert-parallel and expert tensor-parallel sizes (mixture-of-experts models; etp 0 = tp).
  PlanBuilder& ep(int64_t size, int64_t etp = 0) {
    p_.ep = size;
    p_.etp = etp;
    return *this;
  }
  PlanBuilder& order(const std::string& o) {
    p_.order = o;
    return *this;
  }
  operator PlanSpec() const { return p_; }  // NOLINT: used where a PlanSpec is wanted
  PlanSpec spec() const { return p_; }

 private:
  PlanSpec p_;
};

// MT-NLG 530B as published (Smith et al. 2022): tp 8, pp 35, dp 8 on 2240 A100s, micro-batch 1,
// 240 micro-batches (global batch 1920), full recompute.
inline PlanSpec mt_nlg_plan() { return PlanBuilder(8, 35, 8).batches(1, 240).recompute(Recompute::full); }

}  // namespace parallax::test
