#include "parallax/topologies/cluster_size.hpp"

#include <algorithm>

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

int64_t domain_segment_hosts(const ClusterSpec& c, int64_t gpus) {
  const int64_t host = c.host_gpus();
  if (host <= 0 || host >= c.gpus_per_node || gpus % host != 0) return 0;
  const int64_t domain_hosts = c.gpus_per_node / host;
  const int64_t hosts = gpus / host;
  if (hosts <= domain_hosts || hosts % domain_hosts == 0) return 0;
  for (int64_t s = domain_hosts - 1; s > 1; --s)
    if (hosts % s == 0) return s;
  return 1;
}

ClusterSpec with_job_segments(const ClusterSpec& c, int64_t gpus, const std::string& source,
                              const std::string& path) {
  const int64_t segment = domain_segment_hosts(c, gpus);
  if (segment == 0) return c;
  const int64_t domain_hosts = c.gpus_per_node / c.host_gpus();
  ClusterSpec out = c;
  out.name = c.name + " in segments of " + std::to_string(segment) + " hosts";
  out.gpus_per_node = segment * c.host_gpus();
  out.inter.nics_per_node = std::max<int64_t>(1, c.inter.nics_per_node * segment / domain_hosts);
  const int64_t needed = (gpus + out.gpus_per_node - 1) / out.gpus_per_node;
  if (needed <= out.nodes) return out;
  return with_nodes(out, needed, source, path).cluster;
}

}  // namespace parallax
