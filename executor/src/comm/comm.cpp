#include "parallax/executor/comm/comm.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace parallax::exec {

namespace {
int count(int64_t n) {
  if (n > std::numeric_limits<int>::max()) throw std::length_error("message too large for MPI");
  return static_cast<int>(n);
}
// "<collective> floats=N": the kind travels with the record, since a call site's name (e.g.
// "tp_all_reduce_fc_proj") stays the same when sequence parallelism makes it a reduce-scatter.
std::string bytes_shape(const char* kind, int64_t n) {
  return std::string(kind) + " floats=" + std::to_string(n);
}
}  // namespace

void Comm::all_reduce_sum(float* x, int64_t n, const Group& g, Stream s, const std::string& what) {
  if (g.size <= 1 || n == 0) return;
  const double t0 = rec_.now_s();
  MPI_Allreduce(MPI_IN_PLACE, x, count(n), MPI_FLOAT, MPI_SUM, g.comm);
  rec_.add(what, s, t0, rec_.now_s(), 0, 4.0 * static_cast<double>(n), bytes_shape("all_reduce", n), g.name);
}

void Comm::all_reduce_max(float* x, int64_t n, const Group& g, Stream s, const std::string& what) {
  if (g.size <= 1 || n == 0) return;
  const double t0 = rec_.now_s();
  MPI_Allreduce(MPI_IN_PLACE, x, count(n), MPI_FLOAT, MPI_MAX, g.comm);
  rec_.add(what, s, t0, rec_.now_s(), 0, 4.0 * static_cast<double>(n), bytes_shape("all_reduce", n), g.name);
}

void Comm::reduce_scatter_sum(float* x, int64_t block, const Group& g, const std::string& what,
                              Stream s) {
  if (g.size <= 1) return;
  const double t0 = rec_.now_s();
  // In place: the result lands in this rank's own block.
  std::vector<float> out(static_cast<size_t>(block));
  MPI_Reduce_scatter_block(x, out.data(), count(block), MPI_FLOAT, MPI_SUM, g.comm);
  std::copy(out.begin(), out.end(), x + g.rank * block);
  rec_.add(what, s, t0, rec_.now_s(), 0, 4.0 * static_cast<double>(block * g.size),
           bytes_shape("reduce_scatter", block * g.size), g.name);
}

void Comm::all_gather(float* x, int64_t block, const Group& g, const std::string& what,
                      Stream s) {
  if (g.size <= 1) return;
  const double t0 = rec_.now_s();
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, count(block), MPI_FLOAT, g.comm);
  rec_.add(what, s, t0, rec_.now_s(), 0, 4.0 * static_cast<double>(block * g.size),
           bytes_shape("all_gather", block * g.size), g.name);
}

void Comm::all_to_all_v(const float* send, const std::vector<int64_t>& send_rows, float* recv,
                        const std::vector<int64_t>& recv_rows, int64_t row, const Group& g,
                        Stream s, const std::string& what) {
  const auto n = static_cast<size_t>(g.size);
  if (send_rows.size() != n || recv_rows.size() != n)
    throw std::logic_error("all_to_all_v: one row count per rank of " + g.name);
  if (g.size <= 1) {
    std::copy(send, send + send_rows[0] * row, recv);
    return;
  }
  const double t0 = rec_.now_s();
  std::vector<int> sc(n), sd(n), rc(n), rd(n);
  int64_t so = 0, ro = 0;
  for (size_t i = 0; i < n; ++i) {
    sc[i] = count(send_rows[i] * row);
    sd[i] = count(so);
    rc[i] = count(recv_rows[i] * row);
    rd[i] = count(ro);
    so += send_rows[i] * row;
    ro += recv_rows[i] * row;
  }
  MPI_Alltoallv(send, sc.data(), sd.data(), MPI_FLOAT, recv, rc.data(), rd.data(), MPI_FLOAT, g.comm);
  rec_.add(what, s, t0, rec_.now_s(), 0, 4.0 * static_cast<double>(so),
           bytes_shape("all_to_all", so), g.name);
}

double Comm::all_reduce_sum_double(double x, const Group& g) {
  double out = x;
  if (g.size > 1) MPI_Allreduce(&x, &out, 1, MPI_DOUBLE, MPI_SUM, g.comm);
  return out;
}

void Comm::send(const float* x, int64_t n, int dest, int tag, const Group& g,
                const std::string& what) {
  const double t0 = rec_.now_s();
  auto p = std::make_unique<Pending>(Pending{MPI_REQUEST_NULL, std::vector<float>(x, x + n)});
  MPI_Isend(p->buffer.data(), count(n), MPI_FLOAT, dest, tag, g.comm, &p->request);
  pending_.push_back(std::move(p));
  rec_.add(what, Stream::pp_send, t0, rec_.now_s(), 0, 4.0 * static_cast<double>(n), bytes_shape("send_recv", n),
           g.name);
}

void Comm::recv(float* x, int64_t n, int src, int tag, const Group& g, const std::string& what) {
  const double t0 = rec_.now_s();
  MPI_Recv(x, count(n), MPI_FLOAT, src, tag, g.comm, MPI_STATUS_IGNORE);
  rec_.add(what, Stream::pp_recv, t0, rec_.now_s(), 0, 4.0 * static_cast<double>(n), bytes_shape("send_recv", n),
           g.name);
}

void Comm::wait_sends() {
  for (auto& p : pending_) MPI_Wait(&p->request, MPI_STATUS_IGNORE);
  pending_.clear();
}

}  // namespace parallax::exec
