#pragma once
// Node descriptions from what a machine reports about itself:
//  - an NCCL topology dump (NCCL_TOPO_DUMP_FILE=file.xml): <gpu dev=...> with <nvlink target
//    count tclass> children (tclass 0x068000 = NVSwitch, 0x030x00 = a peer GPU) and <net name
//    speed> NICs (speed in Mb/s). NVLinks to NVSwitches become one NVSwitch vertex; each GPU's
//    NIC is the nearest in the PCI tree (fewest XML hops; ties go to the least used NIC). The
//    <net> ports of one <nic> (a dual-port card: two <net>, so 8 cards show 16 ports) are one NIC
//    at the sum of their speeds named "a+b", as NCCL fuses them by default (NCCL_NET_MERGE_LEVEL
//    PORT; NCCL_IB_MERGE_NICS=1) and as the cluster presets count NICs (cards, e.g. 8 per DGX).
//  - `nvidia-smi topo -m` text: NV# cells are NVLink counts (all pairs NV with the same count =
//    an NVSwitch node, otherwise direct GPU-GPU links plus a shared PCIe vertex); the nearest NIC
//    by PIX < PXB < PHB < NODE < SYS. It shows no NIC speed, so that comes from the options.
//    Cells are separated by tabs (as the driver prints them) or spaces. Without NIC columns (the
//    NIC driver not loaded, a cloud VM) the node has no NICs and gets the cluster's when used
//    in one (with_cluster_nics, node_description.hpp).
// PCIe switches and CPUs are not modelled (GPU-NIC links carry the NIC's rate).
#include <string>

#include "parallax/topologies/node_description.hpp"

namespace parallax {

struct ImportOptions {
  // Per NVLink, per direction: 25 GB/s for NVLink 2, 3 and 4 (NVIDIA V100/A100/H100 datasheets:
  // 6, 12 and 18 links for 150, 300 and 450 GB/s per GPU per direction).
  double nvlink_link_bytes_per_s = 25e9;
  // PCIe Gen4 x16 per direction: 16 GT/s x 16 lanes x 128/130 encoding / 8 = 31.5 GB/s (PCI-SIG).
  double pcie_bytes_per_s = 31.5e9;
  // NIC line rate when the input does not say (nvidia-smi): HDR InfiniBand, 200 Gb/s = 25 GB/s.
  double nic_bytes_per_s = 25e9;
};

NodeDescription import_nccl_topology_xml(const std::string& text, const std::string& source,
                                         const ImportOptions& opt = {});
NodeDescription import_nvidia_smi_topo(const std::string& text, const std::string& source,
                                       const ImportOptions& opt = {});

}  // namespace parallax
