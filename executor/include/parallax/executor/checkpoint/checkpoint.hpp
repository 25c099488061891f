#pragma once
// Checkpoints: DIR/step_NNNNNN/ holds one safetensors file per (tp, pp) shard (written by the
// DP rank 0 of each; DP replicas are identical, ZeRO-1 optimizer shards are gathered first) with
// parameters under Hugging Face names and Adam state under "optimizer.m." / "optimizer.v." with
// the same names, and a COMPLETE marker written last. GPT-2 family: GPT-2's names, Conv1D weights
// (c_attn, c_proj, c_fc) in HF's (in, out) layout; Llama family: Llama's names, (out, in), fused
// QKV and SwiGLU tensors split into q/k/v and gate/up (checkpoint_layout.hpp). Word embeddings
// keep the executor's vocabulary padding (multiple of 128*tp). Loading reassembles global tensors
// from all files, so a checkpoint of one plan loads into another (resharding over tp, pp and dp).
#include <cstdint>
#include <string>
#include <vector>

#include "parallax/executor/checkpoint/checkpoint_dir.hpp"
#include "parallax/executor/checkpoint/checkpoint_layout.hpp"
#include "parallax/executor/checkpoint/safetensors.hpp"
#include "parallax/executor/trainer.hpp"

namespace parallax::exec {

// Collective over the world. Every file is written durably (temporary file, fsync, rename) and
// COMPLETE only after every rank's file is; when any rank fails (a full disk), rank 0 removes
// the step's directory and every rank throws the same RunFailure naming the step, the failing
// file and errno's text: the older checkpoints are left as they were.
// Each shard records the plan that wrote it and the model it belongs to (checkpoint_identity).
void save_checkpoint(const std::string& dir, Trainer& t, const ProcessGroups& g,
                     const std::string& plan_json, const ModelSpec& model);
// The newest complete checkpoint that loads (corrupted ones are refused with a message on rank
// 0 and skipped); returns false when there is none. Which model it belongs to is checked before,
// by check_checkpoint_dir.
bool load_latest_checkpoint(const std::string& dir, Trainer& t, const ProcessGroups& g);
// Writes this rank's gradient shards (after reduction) for tests: DIR/grads_tpX_ppY.safetensors,
// named and laid out as the model's checkpoints.
void dump_gradients(const std::string& dir, Trainer& t, const ProcessGroups& g, const ModelSpec& model);
// Reads every *.safetensors in dir (checksums verified) and reassembles the global tensors
// whose executor names start with `prefix`, under the executor's names ("h.0.attn.c_attn.weight"
// whatever the layout stored) in its (out, in) layout.
std::map<std::string, GlobalTensor> read_global_tensors(const std::string& dir,
                                                        const std::string& prefix = "");
// The same, under the names and in the layout the files store (stored names start with `prefix`):
// Hugging Face GPT-2's (Conv1D weights (in, out)) or Llama's.
std::map<std::string, GlobalTensor> read_stored_tensors(const std::string& dir,
                                                        const std::string& prefix = "");

}  // namespace parallax::exec
