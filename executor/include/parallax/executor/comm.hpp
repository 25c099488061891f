#pragma once
// Timed collectives and point-to-point messages over an explicit group; every call is recorded
// with its group, bytes and time.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parallax/executor/groups.hpp"
#include "parallax/executor/recorder.hpp"

namespace parallax::exec {

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
  double all_reduce_sum_double(double x, const Group& g);

  // Non-blocking send (the buffer is copied and kept until wait_sends); blocking receive.
  void send(const float* x, int64_t n, int dest, int tag, const Group& g, const std::string& what);
  void recv(float* x, int64_t n, int src, int tag, const Group& g, const std::string& what);
  void wait_sends();

 private:
  struct Pending {
    MPI_Request request;
    std::vector<float> buffer;
  };
  Recorder& rec_;
  std::vector<std::unique_ptr<Pending>> pending_;
};

}  // namespace parallax::exec
