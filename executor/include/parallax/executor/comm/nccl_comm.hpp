#pragma once
// NCCL communicators bootstrapped from MPI (the CUDA backend and the CUDA calibration sweeps): the first rank of the MPI group calls
// ncclGetUniqueId, MPI_Bcast hands it to the others, every member calls ncclCommInitRank with
// its MPI rank. Collective over the MPI communicator; the caller has chosen its device first.
#include <mpi.h>
#include <nccl.h>

#include <string>

namespace parallax::exec {

class NcclComm {
 public:
  NcclComm() = default;
  explicit NcclComm(MPI_Comm group);  // collective over `group`
  ~NcclComm();
  NcclComm(NcclComm&& o) noexcept;
  NcclComm& operator=(NcclComm&& o) noexcept;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm_t get() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  explicit operator bool() const { return comm_ != nullptr; }

 private:
  ncclComm_t comm_ = nullptr;
  int rank_ = 0, size_ = 0;
};

// "NCCL 2.28.9".
std::string nccl_version();

}  // namespace parallax::exec
