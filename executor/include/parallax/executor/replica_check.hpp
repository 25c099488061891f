#pragma once
// Replicas that stay replicas: the tensors every TP rank holds whole (norms, replicated biases,
// position embeddings; shard_dim < 0) must hold the same bits on every rank of a TP group.
// Nothing all-reduces their gradients over TP without sequence parallelism (Megatron-Core does
// not either): each TP rank computes the gradient itself from inputs that are the same bits on
// every rank (NCCL's all-reduce gives every rank the same result), so they stay equal only
// because every kernel that writes them is deterministic (docs/cuda-backend.md). `parallax run`
// checks it at the end of a run with tp > 1 and reports any tensor that diverged.
#include <cstdint>
#include <string>
#include <vector>

#include "parallax/executor/comm/groups.hpp"
#include "parallax/executor/trainer.hpp"

namespace parallax::exec {

// FNV-1a (64-bit) over the float's bytes: equal bits give equal fingerprints.
uint64_t tensor_fingerprint(const float* data, int64_t n);

// names[i]'s fingerprint on rank r is per_rank[r][i]; the names whose fingerprint differs from
// rank 0's on any rank, in names' order.
std::vector<std::string> replica_mismatches(const std::vector<std::string>& names,
                                            const std::vector<std::vector<uint64_t>>& per_rank);

// The replicated tensors of this rank's TP group whose parameters differ between its ranks
// (the same list on every rank of the group; empty when tp = 1). Collective over the TP group;
// pulls the parameters to the host.
std::vector<std::string> diverged_tp_replicas(Trainer& trainer, const ProcessGroups& groups);

}  // namespace parallax::exec
