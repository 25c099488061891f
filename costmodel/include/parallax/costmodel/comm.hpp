#pragma once
// Communication time for one group of GPUs, two-tier model: NVLink/NVSwitch inside a node,
// NICs between nodes, hierarchical (intra-node reduce-scatter, inter-node all-reduce, intra-node
// all-gather) when a group spans nodes. nccl-tests conventions: busbw = algbw * factor with
// factor 2(n-1)/n (all-reduce), (n-1)/n (reduce-scatter, all-gather), 1 (send/recv).
#include <cstdint>
#include <string>

#include "parallax/core/cluster_spec.hpp"
#include "parallax/core/plan_spec.hpp"

namespace parallax {

enum class Collective { all_reduce, reduce_scatter, all_gather, send_recv };

// Where a group's members sit: size, nodes spanned, most members on one node.
struct GroupSpan {
  int64_t size = 1;
  int64_t nodes = 1;
  int64_t per_node = 1;
};

// Spans of a plan's groups for the representative rank 0 under the plan's order string
// (innermost first, e.g. "tp-dp-pp": rank = tp_i + tp * (dp_i + dp * pp_i); node = rank / G).
struct PlanSpans {
  GroupSpan tp;
  GroupSpan dp;
  bool pp_crosses_nodes = false;
};
PlanSpans plan_spans(const PlanSpec& p, int64_t gpus_per_node);

// Network bandwidth one GPU gets when every GPU of its node talks across nodes at once.
double network_bandwidth_per_gpu(const ClusterSpec& c, const GroupSpan& g);

double collective_time_s(const ClusterSpec& c, Collective op, const GroupSpan& g, double bytes);
double p2p_time_s(const ClusterSpec& c, bool cross_node, double bytes);

double busbw_factor(Collective op, int64_t n);

}  // namespace parallax
