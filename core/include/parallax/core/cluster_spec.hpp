#pragma once
// A cluster: nodes of identical GPUs, an intra-node fabric and an inter-node network.
// Bandwidths are effective (what NCCL achieves), not marketing numbers; each preset says where
// its numbers come from.
#include <cstdint>
#include <string>
#include <vector>

#include "parallax/core/gpu_spec.hpp"

namespace parallax {

struct IntraNodeFabric {
  // "nvswitch" (all-to-all through switches), "nvlink-mesh", "pcie", or "shared-memory" (ranks
  // of one host talking through memory, the cpu-local preset)
  std::string kind;
  // Per GPU, per direction, marketing figure of the links (e.g. 300e9 for A100 NVLink3).
  double nvlink_bandwidth_bytes_per_s = 0;
  // Effective all-reduce bus bandwidth of a full node, large messages (nccl-tests busbw).
  double allreduce_busbw_bytes_per_s = 0;
  // Effective point-to-point bandwidth between two GPUs of a node, per direction.
  double p2p_bandwidth_bytes_per_s = 0;
  double latency_s = 0;  // per hop/step of a collective
};

struct InterNodeNetwork {
  std::string kind;  // "infiniband-hdr", "infiniband-ndr", "infiniband-edr", ...
  int64_t nics_per_node = 0;
  double nic_bandwidth_bytes_per_s = 0;            // line rate per NIC per direction
  double nic_effective_bandwidth_bytes_per_s = 0;  // what one NIC sustains in NCCL
  bool rail_optimized = false;                     // GPU i of every node on leaf/rail i
  int64_t tiers = 1;                               // switch levels (leaf, spine, core)
  int64_t switch_radix = 0;                        // ports per switch
  double oversubscription = 1.0;                   // >= 1; 1 = full bisection (fat tree)
  double latency_s = 0;                            // per hop/step of a collective
  // GPU-to-NIC rails: gpu_nic[g] is the NIC that local GPU g sends through. Empty = the usual
  // wiring, GPU g on NIC g * nics_per_node / gpus_per_node (one NIC per GPU on DGX A100/H100,
  // one per pair of GPUs on DGX-2).
  std::vector<int64_t> gpu_nic;
};

struct ClusterSpec {
  std::string name;
  std::string source;
  GpuSpec gpu;
  int64_t nodes = 0;
  int64_t gpus_per_node = 0;
  // GPUs one host drives (one OS, one SLURM node) when a node - an NVLink domain - spans several,
  // as a GB200 NVL72 rack's 18 compute trays of 4; 0 = the node is one host. Launches only.
  int64_t gpus_per_host = 0;
  IntraNodeFabric intra;
  InterNodeNetwork inter;
  std::string profile;  // name of the default efficiency profile (presets/profiles/NAME.json)

  int64_t total_gpus() const { return nodes * gpus_per_node; }
  int64_t host_gpus() const { return gpus_per_host > 0 ? gpus_per_host : gpus_per_node; }
};

}  // namespace parallax
