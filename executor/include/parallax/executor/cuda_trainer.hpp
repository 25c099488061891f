#pragma once
// The CUDA backend's trainer (built with PARALLAX_CUDA; see executor/src/layers/backend_cuda.hpp).
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "parallax/executor/trainer.hpp"

namespace parallax::exec {

// Number of CUDA devices this process sees; 0 with the runtime's reason in *why.
int cuda_device_count(std::string* why);

// Sets this rank's GPU (device_choice.hpp: the only one it sees, else its local rank's) and
// returns it. Collective over MPI_COMM_WORLD; every rank throws InputError when a rank cannot
// choose, or when two ranks hold the same GPU (by UUID).
int select_cuda_device();

// Chooses this rank's GPU (select_cuda_device), then builds
// the NCCL communicators (collective over MPI_COMM_WORLD and the plan's groups) and the trainer.
// *info receives the backend's dtype, precision, GEMM path and CUDA description.
std::unique_ptr<Trainer> make_cuda_trainer(const PlanFile& plan, const TrainOptions& opt,
                                           const ProcessGroups& groups, Recorder& rec,
                                           TokenSource data, BackendInfo* info);

}  // namespace parallax::exec
