#include "parallax/executor/comm/nccl_comm.hpp"

#include <utility>

#include "parallax/kernels/cuda/check.hpp"

namespace parallax::exec {

NcclComm::NcclComm(MPI_Comm group) {
  MPI_Comm_rank(group, &rank_);
  MPI_Comm_size(group, &size_);
  ncclUniqueId id{};
  if (rank_ == 0) PX_NCCL(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, group);
  PX_NCCL(ncclCommInitRank(&comm_, size_, id, rank_));
}

NcclComm::~NcclComm() {
  if (comm_) ncclCommDestroy(comm_);  // no throw from a destructor
}

NcclComm::NcclComm(NcclComm&& o) noexcept
    : comm_(std::exchange(o.comm_, nullptr)), rank_(o.rank_), size_(o.size_) {}

NcclComm& NcclComm::operator=(NcclComm&& o) noexcept {
  if (this != &o) {
    if (comm_) ncclCommDestroy(comm_);
    comm_ = std::exchange(o.comm_, nullptr);
    rank_ = o.rank_;
    size_ = o.size_;
  }
  return *this;
}

std::string nccl_version() {
  int v = 0;
  PX_NCCL(ncclGetVersion(&v));
  return "NCCL " + std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." +
         std::to_string(v % 100);
}

}  // namespace parallax::exec
