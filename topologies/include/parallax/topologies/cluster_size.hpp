#pragma once
// A preset cluster at another size: the same nodes and fabric, N of them, up to what the fabric's
// switches can join. A two-tier fat tree that cannot join N nodes gains a third (core) tier, as
// SuperPODs beyond four scalable units do; beyond three tiers the size is refused.
#include <cstdint>
#include <string>

#include "parallax/core/cluster_spec.hpp"

namespace parallax {

struct ResizedCluster {
  ClusterSpec cluster;
  bool third_tier_added = false;
};

// Throws InputError(source, path, rule) when the fabric cannot join `nodes` nodes.
ResizedCluster with_nodes(const ClusterSpec& c, int64_t nodes, const std::string& source,
                          const std::string& path);

}  // namespace parallax
