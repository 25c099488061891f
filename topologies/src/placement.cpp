#include "parallax/topologies/placement.hpp"

#include <sstream>

#include "parallax/core/error.hpp"

namespace parallax {
namespace {

constexpr std::array<const char*, 4> kDimNames{"tp", "cp", "dp", "pp"};

}  // namespace

const char* to_string(ParallelDim d) { return kDimNames[static_cast<size_t>(d)]; }

Placement::Placement(int64_t tp, int64_t cp, int64_t dp, int64_t pp, const std::string& order)
    : sizes_{tp, cp, dp, pp}, order_(placement_order(order, cp)) {
  std::array<bool, 4> seen{};
  std::stringstream ss(order_);
  std::string part;
  int64_t stride = 1;
  while (std::getline(ss, part, '-')) {
    size_t d = 0;
    while (d < kDimNames.size() && part != kDimNames[d]) ++d;
    if (d == kDimNames.size() || seen[d])
      throw InputError("command line", "--order",
                       "must name tp, dp and pp (and optionally cp) once each, joined by '-' (got \"" +
                           order + "\")");
    seen[d] = true;
    strides_[d] = stride;
    stride *= sizes_[d];
  }
  for (size_t d = 0; d < seen.size(); ++d) {
    if (seen[d]) continue;
    if (static_cast<ParallelDim>(d) != ParallelDim::cp || sizes_[d] != 1)
      throw InputError("command line", "--order",
                       std::string("must name ") + kDimNames[d] + " (got \"" + order + "\")");
    strides_[d] = stride;  // size 1: its coordinate is always 0
  }
  for (int64_t s : sizes_)
    if (s < 1) throw InputError("command line", "--order", "every parallel size must be >= 1");
}

Placement::Placement(const PlanSpec& p) : Placement(p.tp, p.cp, p.dp, p.pp, p.order) {}

RankCoords Placement::coords(int64_t rank) const {
  auto c = [&](ParallelDim d) { return (rank / stride(d)) % size(d); };
  return {c(ParallelDim::tp), c(ParallelDim::cp), c(ParallelDim::dp), c(ParallelDim::pp)};
}

int64_t Placement::rank(const RankCoords& c) const {
  return c.tp * stride(ParallelDim::tp) + c.cp * stride(ParallelDim::cp) +
         c.dp * stride(ParallelDim::dp) + c.pp * stride(ParallelDim::pp);
}

std::vector<int64_t> Placement::group_of(ParallelDim d, int64_t r) const {
  const int64_t s = stride(d);
  const int64_t first = r - ((r / s) % size(d)) * s;
  std::vector<int64_t> g;
  g.reserve(static_cast<size_t>(size(d)));
  for (int64_t i = 0; i < size(d); ++i) g.push_back(first + i * s);
  return g;
}

std::vector<int64_t> Placement::group_of(std::initializer_list<ParallelDim> dims, int64_t r) const {
  std::vector<int64_t> g = group_of(*dims.begin(), r);
  for (auto d = dims.begin() + 1; d != dims.end(); ++d) {
    std::vector<int64_t> wider;
    const int64_t base = r / stride(*d) % size(*d) * stride(*d);
    for (int64_t i = 0; i < size(*d); ++i)
      for (int64_t x : g) wider.push_back(x - base + i * stride(*d));
    g = std::move(wider);
  }
  return g;
}

std::vector<std::vector<int64_t>> Placement::groups(std::initializer_list<ParallelDim> dims) const {
  std::vector<std::vector<int64_t>> out;
  for (int64_t r = 0; r < world_size(); ++r) {
    bool first = true;
    for (ParallelDim d : dims) first = first && (r / stride(d)) % size(d) == 0;
    if (first) out.push_back(group_of(dims, r));
  }
  return out;
}

std::vector<std::vector<int64_t>> Placement::groups(ParallelDim d) const {
  std::vector<std::vector<int64_t>> out;
  const int64_t s = stride(d);
  for (int64_t r = 0; r < world_size(); ++r)
    if ((r / s) % size(d) == 0) out.push_back(group_of(d, r));
  return out;
}

std::vector<std::vector<int64_t>> expert_groups(const Placement& pl, int64_t etp, int64_t ep,
                                                ExpertDim d) {
  const int64_t pp = pl.size(ParallelDim::pp);
  std::vector<std::vector<int64_t>> stage_ranks(static_cast<size_t>(pp));
  for (int64_t r = 0; r < pl.world_size(); ++r)
    stage_ranks[static_cast<size_t>(pl.coords(r).pp)].push_back(r);  // ascending
  std::vector<std::vector<int64_t>> out;
  for (const std::vector<int64_t>& ranks : stage_ranks) {
    const auto n = static_cast<int64_t>(ranks.size());
    const int64_t edp = n / (etp * ep);
    // Coordinates (etp_i, ep_i, edp_i) sit at index etp_i + etp * (ep_i + ep * edp_i).
    const int64_t size = d == ExpertDim::etp ? etp : d == ExpertDim::ep ? ep : edp;
    const int64_t stride = d == ExpertDim::etp ? 1 : d == ExpertDim::ep ? etp : etp * ep;
    for (int64_t i = 0; i < n; ++i) {
      if ((i / stride) % size != 0) continue;  // i is the first member of its group
      std::vector<int64_t> g;
      for (int64_t j = 0; j < size; ++j) g.push_back(ranks[static_cast<size_t>(i + j * stride)]);
      out.push_back(std::move(g));
    }
  }
  return out;
}

}  // namespace parallax
