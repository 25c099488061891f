#pragma once
// Which GPU a rank uses, decided from what the rank can see, without CUDA (host-testable).
//
// Launchers hand GPUs to ranks in two ways: every rank sees the node's GPUs and picks by its
// local rank (mpirun, torchrun), or every rank sees exactly its own (srun --gpus-per-task=1,
// cgroup-restricted jobs, wrappers setting CUDA_VISIBLE_DEVICES=$LOCAL_RANK). Counting the visible
// devices against the ranks on the node refuses the second; this rule takes both, and ranks that
// really share a GPU are found by its UUID, which is the same however it is numbered.
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace parallax::exec {

struct DeviceChoice {
  int device = -1;      // the CUDA ordinal to set; -1 when refused
  std::string refusal;  // why no device can be chosen; empty when one is
};

// A rank that sees exactly one device uses it; one that sees at least as many devices as ranks
// run on its node uses the one at its local rank; anything else is refused.
DeviceChoice choose_cuda_device(int visible_devices, int local_rank, int ranks_on_node);

// The first two ranks (in rank order) whose device UUIDs are equal: ranks sharing one GPU, which
// NCCL refuses within a communicator. nullopt when every rank has its own.
std::optional<std::pair<int, int>> ranks_sharing_a_device(const std::vector<std::string>& uuids);

}  // namespace parallax::exec
