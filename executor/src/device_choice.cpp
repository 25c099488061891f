#include "parallax/executor/device_choice.hpp"

#include <map>

namespace parallax::exec {

DeviceChoice choose_cuda_device(int visible_devices, int local_rank, int ranks_on_node) {
  if (visible_devices < 1) return {-1, "this rank sees no CUDA device"};
  if (visible_devices == 1) return {0, {}};
  if (local_rank < visible_devices && ranks_on_node <= visible_devices) return {local_rank, {}};
  return {-1, "one rank per GPU: this node runs " + std::to_string(ranks_on_node) +
                  " ranks and this rank sees " + std::to_string(visible_devices) +
                  " CUDA devices (give every rank the node's GPUs, or exactly one each)"};
}

std::optional<std::pair<int, int>> ranks_sharing_a_device(const std::vector<std::string>& uuids) {
  std::map<std::string, int> first_rank;
  for (size_t r = 0; r < uuids.size(); ++r) {
    const auto [it, fresh] = first_rank.emplace(uuids[r], static_cast<int>(r));
    if (!fresh) return std::make_pair(it->second, static_cast<int>(r));
  }
  return std::nullopt;
}

}  // namespace parallax::exec
