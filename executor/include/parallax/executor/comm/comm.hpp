#pragma once
// Timed collectives and point-to-point messages over an explicit group; every call is recorded
// with its group, bytes and time.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parallax/executor/comm/groups.hpp"
#include "parallax/executor/recorder.hpp"

namespace parallax::exec {

// Which way a pipeline message travels: activations forward, their gradients backward. The
// NCCL backend keeps one channel (communicator and stream) per direction and peer.
enum class P2PDir { forward, backward };

// MPI (CPU backend).
class Comm {
 public:
  explicit Comm(Recorder& rec) : rec_(rec) {}

  // In place; no-op on a group of one.
  void all_reduce_sum(float* x, int64_t n, const Group& g, Stream s, const std::string& what);
  void all_reduce_max(float* x, int64_t n, const Group& g, Stream s, const std::string& what);
  // x holds g.size blocks of `block` elements; afterwards block g.rank holds the sum.
  void reduce_scatter_sum(float* x, int64_t block, const Group& g, const std::string& what,
                          Stream s = Stream::dp);
  // x holds g.size blocks; each rank contributes its own block, all receive all.
  void all_gather(float* x, int64_t block, const Group& g, const std::string& what,
                  Stream s = Stream::dp);
  // All-to-all-v of rows of `row` floats: send_rows[i] rows go to group rank i (send holds them
  // in rank order), recv_rows[i] arrive from rank i (recv receives them in rank order).
  void all_to_all_v(const float* send, const std::vector<int64_t>& send_rows, float* recv,
                    const std::vector<int64_t>& recv_rows, int64_t row, const Group& g,
                    Stream s, const std::string& what);
  double all_reduce_sum_double(double x, const Group& g);
  // In place, untimed (the loss and the gradient norm).
  void all_reduce_scalar(double* x, const Group& g) { *x = all_reduce_sum_double(*x, g); }

  // Non-blocking send (the buffer is copied and kept until wait_sends); blocking receive.
  void send(const float* x, int64_t n, int dest, int tag, const Group& g, const std::string& what);
  void recv(float* x, int64_t n, int src, int tag, const Group& g, const std::string& what);
  void wait_sends();
  // The backend-neutral forms the trainer calls (direction and stash events unused over MPI:
  // sends are copied, so their buffers are free at once).
  template <class Sync>
  void send(const float* x, int64_t n, int dest, int tag, const Group& g, const std::string& what,
            P2PDir, Sync*) {
    send(x, n, dest, tag, g, what);
  }
  template <class Sync>
  void recv(float* x, int64_t n, int src, int tag, const Group& g, const std::string& what,
            P2PDir, const Sync*) {
    recv(x, n, src, tag, g, what);
  }

 private:
  struct Pending {
    MPI_Request request;
    std::vector<float> buffer;
  };
  Recorder& rec_;
  std::vector<std::unique_ptr<Pending>> pending_;
};

}  // namespace parallax::exec
