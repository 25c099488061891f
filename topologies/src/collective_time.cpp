// Closed-form collective times of an analysed group (see collectives.hpp for the model).
#include <algorithm>
#include <cmath>

#include "parallax/core/error.hpp"
#include "parallax/topologies/collectives.hpp"

namespace parallax {
namespace {

double ring_term(const RingCost& r, double steps, double factor, double bytes) {
  return steps * r.alpha_s + factor * bytes / r.bandwidth_bytes_per_s;
}

// The inter-node phase on each member's share, ring or double binary tree.
double inter_phase(const GroupCost& g, Collective op, double share, Algorithm algo) {
  const double n = static_cast<double>(g.nodes);
  switch (op) {
    case Collective::all_reduce:
      if (algo == Algorithm::tree)
        return 2 * std::ceil(std::log2(n)) * g.inter.alpha_s + 2 * share / g.inter.bandwidth_bytes_per_s;
      return ring_term(g.inter, 2 * (n - 1), 2 * (n - 1) / n, share);
    case Collective::reduce_scatter:
    case Collective::all_gather: return ring_term(g.inter, n - 1, (n - 1) / n, share);
    case Collective::broadcast: return ring_term(g.inter, n - 1, 1, share);
    case Collective::send_recv: break;
  }
  return 0;
}

double intra_phase(const GroupCost& g, Collective op, double bytes, int64_t members) {
  if (members <= 1) return 0;
  const double k = static_cast<double>(members);
  switch (op) {
    case Collective::all_reduce: return ring_term(g.intra, 2 * (k - 1), 2 * (k - 1) / k, bytes);
    case Collective::reduce_scatter:
    case Collective::all_gather: return ring_term(g.intra, k - 1, (k - 1) / k, bytes);
    // Single node: a pipelined ring broadcast. Across nodes: the root node scatters the buffer
    // over its k members and every node all-gathers it after the inter-node rings.
    case Collective::broadcast:
      return g.nodes == 1 ? ring_term(g.intra, k - 1, 1, bytes)
                          : 2 * ring_term(g.intra, k - 1, (k - 1) / k, bytes);
    case Collective::send_recv: break;
  }
  return 0;
}

// A ring spanning nodes is one ring over all N members (NCCL builds its rings through every GPU):
// of its N - 1 steps per pass, nodes - 1 cross the network and the other N - nodes stay inside a
// node, each paying its latency (NCCL's tuning model, src/graph/tuning.cc: (nsteps - nInterSteps)
// * intraLat + nInterSteps * interLat). The hierarchical phases above charge only the k - 1
// steps of one node's ring; the rest of the ring's intra-node steps are added here.
double ring_intra_steps_beyond_one_node(const GroupCost& g, Collective op) {
  const double passes = op == Collective::all_reduce ? 2 : 1;
  const double n = static_cast<double>(g.size), nodes = static_cast<double>(g.nodes);
  const double k = static_cast<double>(g.per_node);
  return passes * std::max(0.0, (n - nodes) - (k - 1));
}

double time_with(const GroupCost& g, Collective op, double bytes, Algorithm algo) {
  if (g.nodes <= 1) return intra_phase(g, op, bytes, g.size);
  const double share = bytes / static_cast<double>(g.per_node);
  const double extra_latency =
      algo == Algorithm::ring && (op == Collective::all_reduce || op == Collective::all_gather ||
                                  op == Collective::reduce_scatter)
          ? ring_intra_steps_beyond_one_node(g, op) * g.intra.alpha_s
          : 0;
  return intra_phase(g, op, bytes, g.per_node) + inter_phase(g, op, share, algo) + extra_latency;
}

}  // namespace

double all_to_all_time_s(const GroupCost& g, double bytes) {
  if (g.size <= 1 || bytes <= 0) return 0;
  const double n = static_cast<double>(g.size), k = static_cast<double>(g.per_node);
  return two_level_exchange_time_s(g, bytes * (k - 1) / n, g.nodes > 1 ? bytes * (n - k) / n : 0);
}

double two_level_exchange_time_s(const GroupCost& g, double intra_bytes, double inter_bytes) {
  if (g.size <= 1) return 0;
  const double intra = g.per_node > 1 && intra_bytes > 0
                           ? g.intra.alpha_s + intra_bytes / g.intra.bandwidth_bytes_per_s : 0;
  const double inter = g.nodes > 1 && inter_bytes > 0
                           ? g.inter.alpha_s + inter_bytes / g.inter.bandwidth_bytes_per_s : 0;
  return std::max(intra, inter);
}

const char* to_string(Collective op) {
  switch (op) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::all_gather: return "all_gather";
    case Collective::broadcast: return "broadcast";
    case Collective::send_recv: return "send_recv";
  }
  return "?";
}

const char* to_string(Algorithm a) {
  switch (a) {
    case Algorithm::ring: return "ring";
    case Algorithm::tree: return "tree";
    case Algorithm::automatic: return "auto";
  }
  return "?";
}

double busbw_factor(Collective op, int64_t n) {
  const double x = static_cast<double>(n);
  switch (op) {
    case Collective::all_reduce: return 2 * (x - 1) / x;
    case Collective::reduce_scatter:
    case Collective::all_gather: return (x - 1) / x;
    case Collective::broadcast:
    case Collective::send_recv: return 1;
  }
  return 1;
}

double collective_time_s(const GroupCost& g, Collective op, double bytes, Algorithm algo) {
  if (op == Collective::send_recv)
    throw InputError("command line", "--op", "send_recv is point-to-point: use p2p costs");
  if (algo == Algorithm::tree && op != Collective::all_reduce)
    throw InputError("command line", "--algo",
                     std::string("tree supports all_reduce only, as in NCCL (got ") + to_string(op) + ")");
  if (g.size <= 1 || bytes <= 0) return 0;
  if (algo != Algorithm::automatic) return time_with(g, op, bytes, algo);
  const double ring = time_with(g, op, bytes, Algorithm::ring);
  if (op != Collective::all_reduce || g.nodes <= 1) return ring;
  return std::min(ring, time_with(g, op, bytes, Algorithm::tree));
}

}  // namespace parallax
