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

// A job's share of NVLink domains that span several hosts (GB200 NVL72: 18 hosts of 4 GPUs).
// SLURM's block topology allocates such a job in segments of whole hosts, each segment inside one
// domain (sbatch --segment), and a segment count must divide the job's hosts. A job on more hosts
// than a domain holds, and not on whole domains, gets the largest segment that divides its hosts
// and fits a domain, the rule of Megatron-Bridge's performance scripts
// (scripts/performance/utils/executors.py: 64 hosts of a GB200 rack of 18 run in segments of 16).
// 0 when the job is not split so: a domain of one host, a job inside one domain, or whole domains.
int64_t domain_segment_hosts(const ClusterSpec& c, int64_t gpus);

// The cluster as such a job sees it: a node is one segment (segment x gpus_per_host GPUs, with the
// NICs of its hosts), so consecutive ranks fill a segment and the next segment is in another
// domain. The name says so. `c` itself when domain_segment_hosts is 0; grown (with_nodes) when
// its nodes hold fewer segments than the job needs.
ClusterSpec with_job_segments(const ClusterSpec& c, int64_t gpus, const std::string& source,
                              const std::string& path);

}  // namespace parallax
