#include "parallax/topologies/cluster_size.hpp"

#include "parallax/core/error.hpp"
#include "parallax/topologies/cluster_graph.hpp"

namespace parallax {

ResizedCluster with_nodes(const ClusterSpec& c, int64_t nodes, const std::string& source,
                          const std::string& path) {
  ResizedCluster out{c, false};
  out.cluster.nodes = nodes;
  try {
    ClusterGraph g(out.cluster);
    return out;
  } catch (const InputError& e) {
    if (out.cluster.inter.tiers != 2) throw InputError(source, path, e.rule());
  }
  out.cluster.inter.tiers = 3;
  out.third_tier_added = true;
  try {
    ClusterGraph g(out.cluster);
  } catch (const InputError& e) {
    throw InputError(source, path, "cluster " + c.name + " cannot grow to " +
                                       std::to_string(nodes) + " nodes: " + e.rule());
  }
  return out;
}

}  // namespace parallax
