// The CUDA backend's device rule without a GPU: each launcher's way of handing out GPUs, and
// ranks sharing one found by UUID. The cases are the launches of issue 25: mpirun/torchrun
// (every rank sees the node's 8 GPUs), srun --gpus-per-task=1, cgroups and
// CUDA_VISIBLE_DEVICES=$LOCAL_RANK wrappers (every rank sees exactly its own).
#include <catch2/catch.hpp>

#include "parallax/executor/device_choice.hpp"

using namespace parallax::exec;

TEST_CASE("a rank takes the one GPU it sees, or its local rank's of the node's") {
  // srun --gpus-per-task=1 on an 8-GPU node: every rank sees one device, its own.
  for (int local = 0; local < 8; ++local) {
    const DeviceChoice c = choose_cuda_device(1, local, 8);
    CHECK(c.device == 0);
    CHECK(c.refusal.empty());
  }
  // mpirun or torchrun: every rank sees the 8 GPUs and takes its local rank's.
  for (int local = 0; local < 8; ++local) CHECK(choose_cuda_device(8, local, 8).device == local);
  // Fewer ranks than GPUs (a 4-rank test on an 8-GPU node).
  CHECK(choose_cuda_device(8, 3, 4).device == 3);
}

TEST_CASE("a rank that cannot have a GPU of its own is refused with the reason") {
  const DeviceChoice none = choose_cuda_device(0, 0, 1);
  CHECK(none.device == -1);
  CHECK(none.refusal == "this rank sees no CUDA device");
  // 8 ranks on a node whose ranks each see 4 GPUs: local ranks 4-7 have none of their own.
  const DeviceChoice crowded = choose_cuda_device(4, 6, 8);
  CHECK(crowded.device == -1);
  CHECK(crowded.refusal.find("this node runs 8 ranks and this rank sees 4 CUDA devices") != std::string::npos);
  // Even local rank 1 is refused there: two ranks of the node would land on each GPU.
  CHECK(choose_cuda_device(4, 1, 8).device == -1);
}

TEST_CASE("ranks on one GPU are found by its UUID, whatever its ordinal") {
  // Two ranks that each see "device 0" under CUDA_VISIBLE_DEVICES hold different GPUs.
  CHECK_FALSE(ranks_sharing_a_device({"GPU-aa", "GPU-bb", "GPU-cc"}).has_value());
  const auto shared = ranks_sharing_a_device({"GPU-aa", "GPU-bb", "GPU-cc", "GPU-bb", "GPU-aa"});
  REQUIRE(shared.has_value());
  CHECK(shared->first == 1);
  CHECK(shared->second == 3);
}
