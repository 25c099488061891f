// The CUDA backend's instantiations of the chunk and trainer templates, and its factory.
#include "parallax/executor/cuda_trainer.hpp"

#include <mpi.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "layers/backend_cuda.hpp"
#include "parallax/core/error.hpp"
#include "parallax/executor/device_choice.hpp"
#include "parallax/kernels/cuda/device.hpp"
#include "trainer_impl.hpp"

namespace parallax::exec {

template class ChunkT<CudaBackend>;
template class TrainerImpl<CudaBackend>;

namespace {

// This rank's index among the ranks of its node, and their number.
std::pair<int, int> local_rank_and_size() {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int r = 0, n = 1;
  MPI_Comm_rank(node, &r);
  MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  return {r, n};
}

struct CudaParts {
  CudaBackend be;
  CudaComm comm;
  CudaParts(Recorder& rec, int device, const ProcessGroups& g, const PlanSpec& p)
      : be(rec, device), comm(be, g, p) {}
};

class CudaTrainer final : private CudaParts, public TrainerImpl<CudaBackend> {
 public:
  CudaTrainer(int device, const PlanFile& plan, const TrainOptions& opt,
              const ProcessGroups& groups, Recorder& rec, TokenSource data)
      : CudaParts(rec, device, groups, plan.plan),
        TrainerImpl<CudaBackend>(CudaParts::be, CudaParts::comm, plan, opt, groups,
                                 std::move(data)) {}
  std::string gemm_path() const { return CudaParts::be.blas().description(); }
};

}  // namespace

int cuda_device_count(std::string* why) { return kernels::cuda::device_count(why); }

int select_cuda_device() {
  const int devices = kernels::cuda::device_count();
  const auto [local, on_node] = local_rank_and_size();
  // Decided over all ranks, so that every rank stops here rather than some in NCCL's
  // initialisation: a rank that cannot choose says why, the others that one did not.
  const DeviceChoice choice = choose_cuda_device(devices, local, on_node);
  int refused = choice.device < 0 ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &refused, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (refused)
    throw InputError("command line", "--backend cuda",
                     choice.device < 0 ? choice.refusal : "another rank could not choose a CUDA device");
  PX_CUDA(cudaSetDevice(choice.device));
  // One rank per GPU (NCCL refuses two ranks of a communicator on one device), by UUID: two
  // ranks that each see "device 0" may or may not share it.
  const std::string uuid = kernels::cuda::device_uuid(choice.device);
  int world = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  std::vector<char> all(static_cast<size_t>(world) * 64, '\0');
  char mine[64] = {};
  uuid.copy(mine, sizeof mine - 1);
  MPI_Allgather(mine, 64, MPI_CHAR, all.data(), 64, MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> uuids;
  for (int r = 0; r < world; ++r) uuids.emplace_back(all.data() + static_cast<size_t>(r) * 64);
  if (const auto shared = ranks_sharing_a_device(uuids))
    throw InputError("command line", "--backend cuda",
                     "one rank per GPU: ranks " + std::to_string(shared->first) + " and " +
                         std::to_string(shared->second) + " share " + uuids[static_cast<size_t>(shared->first)]);
  return choice.device;
}

std::unique_ptr<Trainer> make_cuda_trainer(const PlanFile& plan, const TrainOptions& opt,
                                           const ProcessGroups& groups, Recorder& rec,
                                           TokenSource data, BackendInfo* info) {
  const int devices = kernels::cuda::device_count();
  const int device = select_cuda_device();
  auto t = std::make_unique<CudaTrainer>(device, plan, opt, groups, rec, std::move(data));
  if (info) {
    // executed_dtype is the dtype the GEMMs ran in (what compare and the refits read); the
    // whole precision recipe goes beside it.
    info->executed_dtype = "bf16";
    info->precision = "bf16 weights and activations; fp32 master weights, Adam state and gradients";
    info->gemm_path = t->gemm_path();
    info->cuda = {{"runtime", kernels::cuda::runtime_version()},
                  {"nccl", nccl_version()},
                  {"device", kernels::cuda::device_description(device)},
                  {"devices_on_node", devices}};
  }
  return t;
}

}  // namespace parallax::exec
