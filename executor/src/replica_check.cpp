#include "parallax/executor/replica_check.hpp"

#include <mpi.h>

#include <cstring>

namespace parallax::exec {

uint64_t tensor_fingerprint(const float* data, int64_t n) {
  uint64_t h = 14695981039346656037ULL;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, data + i, sizeof(bits));
    for (int b = 0; b < 4; ++b) {
      h ^= (bits >> (8 * b)) & 0xffu;
      h *= 1099511628211ULL;
    }
  }
  return h;
}

std::vector<std::string> replica_mismatches(const std::vector<std::string>& names,
                                            const std::vector<std::vector<uint64_t>>& per_rank) {
  std::vector<std::string> out;
  for (size_t i = 0; i < names.size(); ++i)
    for (size_t r = 1; r < per_rank.size(); ++r)
      if (per_rank[r].at(i) != per_rank[0].at(i)) {
        out.push_back(names[i]);
        break;
      }
  return out;
}

std::vector<std::string> diverged_tp_replicas(Trainer& trainer, const ProcessGroups& groups) {
  if (groups.tp.size <= 1) return {};
  trainer.pull_params();
  const std::vector<float>& params = trainer.params();
  std::vector<std::string> names;
  std::vector<uint64_t> mine;
  for (const auto& t : trainer.tensors()) {
    if (t.shard_dim >= 0) continue;
    names.push_back(t.name);
    mine.push_back(tensor_fingerprint(params.data() + t.offset, t.numel()));
  }
  // Every TP rank holds the same tensors (one stage, one layout), so the lists line up.
  std::vector<uint64_t> all(mine.size() * static_cast<size_t>(groups.tp.size));
  MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_UINT64_T, all.data(),
                static_cast<int>(mine.size()), MPI_UINT64_T, groups.tp.comm);
  std::vector<std::vector<uint64_t>> per_rank(static_cast<size_t>(groups.tp.size));
  for (size_t r = 0; r < per_rank.size(); ++r)
    per_rank[r].assign(all.begin() + static_cast<std::ptrdiff_t>(r * mine.size()),
                       all.begin() + static_cast<std::ptrdiff_t>((r + 1) * mine.size()));
  return replica_mismatches(names, per_rank);
}

}  // namespace parallax::exec
