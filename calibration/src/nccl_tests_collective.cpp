// The collective, ranks and layout of a nccl-tests run. See nccl_tests_collective.hpp.
#include "parallax/calibration/nccl_tests_collective.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "parallax/core/error.hpp"

namespace parallax::calib {
namespace {

enum class Family { all_reduce, per_rank, whole };  // busbw factor 2(n-1)/n, (n-1)/n, 1

struct Candidate {
  const char* name;
  Family family;
  bool none_redop;  // prints redop "none" (2.13+)
  bool rooted;      // prints a root >= 0 (2.13+)
};

// nccl-tests' tests, in the order an ambiguity lists them.
constexpr Candidate kCandidates[] = {
    {"all_reduce", Family::all_reduce, false, false}, {"all_gather", Family::per_rank, true, false},
    {"reduce_scatter", Family::per_rank, false, false}, {"alltoall", Family::per_rank, true, false},
    {"broadcast", Family::whole, true, true},           {"reduce", Family::whole, false, true},
    {"send_recv", Family::whole, false, false}};

double factor(Family f, double n) {
  switch (f) {
    case Family::all_reduce: return 2 * (n - 1) / n;
    case Family::per_rank: return (n - 1) / n;
    case Family::whole: return 1;
  }
  return 1;
}

// Bytes per element of nccl-tests' type names (src/common.cu test_typenames); 0 = unknown.
double type_bytes(const std::string& type) {
  static const std::map<std::string, double> kBytes{
      {"int8", 1},   {"uint8", 1},  {"char", 1},     {"f8e4m3", 1}, {"f8e5m2", 1},
      {"half", 2},   {"bfloat16", 2}, {"int32", 4},  {"uint32", 4}, {"float", 4},
      {"int", 4},    {"int64", 8},  {"uint64", 8},   {"double", 8}};
  const auto it = kBytes.find(type);
  return it == kBytes.end() ? 0 : it->second;
}

// What the table says, from the row with the largest algbw.
struct TableEvidence {
  std::optional<double> ratio;  // busbw / algbw
  double tolerance = 0;         // of the ratio, from the 0.005 rounding of both values
  double ratio_size_bytes = 0;
  std::optional<int64_t> multiple;  // size / (count x sizeof(type))
  std::string redop;                // "" = no column or blank
  std::optional<bool> rooted;       // nullopt = no root column
};

TableEvidence read_table(const NcclTestsRun& run) {
  TableEvidence e;
  double best_algbw = 0;
  for (const NcclTestsRow& r : run.rows) {
    for (const auto& [algbw, busbw] : {std::pair{r.oop_algbw_gbps, r.oop_busbw_gbps},
                                       std::pair{r.ip_algbw_gbps, r.ip_busbw_gbps}}) {
      if (!std::isfinite(algbw) || !std::isfinite(busbw) || algbw <= best_algbw || busbw <= 0)
        continue;
      best_algbw = algbw;
      e.ratio = busbw / algbw;
      e.tolerance = *e.ratio * (0.005 / busbw + 0.005 / algbw) + 1e-9;
      e.ratio_size_bytes = r.size_bytes;
    }
  }
  for (auto it = run.rows.rbegin(); it != run.rows.rend() && !e.multiple; ++it) {
    const double bytes = type_bytes(it->type);
    if (bytes <= 0 || it->count <= 0) continue;
    const double m = it->size_bytes / (static_cast<double>(it->count) * bytes);
    if (m >= 1 && std::floor(m) == m) e.multiple = static_cast<int64_t>(m);
  }
  if (run.redop_column && !run.rows.empty()) e.redop = run.rows.front().redop;
  if (run.root_column && !run.rows.empty()) e.rooted = run.rows.front().root >= 0;
  return e;
}

// The one whole n >= 2 whose factor is within the ratio's tolerance, else nullopt.
std::optional<int64_t> ranks_from_ratio(Family f, const TableEvidence& e) {
  if (!e.ratio || f == Family::whole) return std::nullopt;
  const double scale = f == Family::all_reduce ? 2 : 1;  // r = scale (1 - 1/n)
  const double lo = *e.ratio - e.tolerance, hi = *e.ratio + e.tolerance;
  if (hi >= scale) return std::nullopt;  // n unbounded
  const double n_lo = std::max(2.0, std::ceil(scale / (scale - std::max(lo, 0.0)) - 1e-9));
  const double n_hi = std::floor(scale / (scale - hi) + 1e-9);
  if (n_lo != n_hi) return std::nullopt;
  return static_cast<int64_t>(n_lo);
}

// Ranks of this collective from the table alone; 0 when it does not tell.
int64_t ranks_from_table(Family f, const TableEvidence& e) {
  if (f == Family::per_rank && e.multiple && *e.multiple >= 2) return *e.multiple;
  return ranks_from_ratio(f, e).value_or(0);
}

bool fits(const Candidate& c, const TableEvidence& e, int64_t n) {
  if (!e.redop.empty() && (e.redop == "none") != c.none_redop) return false;
  if (e.rooted && *e.rooted != c.rooted) return false;
  if (e.multiple) {
    if (c.family == Family::per_rank ? *e.multiple < 2 || (n > 0 && *e.multiple != n)
                                     : *e.multiple != 1)
      return false;
  }
  if (!e.ratio) return true;
  if (n > 0) return std::abs(factor(c.family, static_cast<double>(n)) - *e.ratio) <= e.tolerance;
  if (c.family == Family::whole) return std::abs(1 - *e.ratio) <= e.tolerance;
  // Some whole n >= 2 within the tolerance (the factor grows with n towards 1 or 2).
  const double scale = c.family == Family::all_reduce ? 2 : 1;
  return *e.ratio + e.tolerance >= scale / 2 && *e.ratio - e.tolerance < scale;
}

std::string describe(const TableEvidence& e, int64_t n) {
  std::ostringstream s;
  if (e.ratio) {
    s.precision(4);
    s << "busbw/algbw " << *e.ratio << " at " << static_cast<int64_t>(e.ratio_size_bytes) << " B";
  } else {
    s << "no busbw/algbw";
  }
  s << (n > 0 ? ", " + std::to_string(n) + " ranks" : ", ranks unknown");
  if (e.multiple) s << ", size = " << *e.multiple << " x count x type size";
  if (!e.redop.empty()) s << ", redop \"" << e.redop << "\"";
  else s << ", no redop column";
  return s.str();
}

std::string canonical_name(const std::string& name) {
  if (name == "sendrecv") return "send_recv";
  return name;
}

const Candidate* candidate(const std::string& name) {
  for (const Candidate& c : kCandidates)
    if (name == c.name) return &c;
  return nullptr;
}

}  // namespace

NcclTestsIdentity identify_nccl_tests(const NcclTestsRun& run, const std::string& override_collective,
                                      const std::string& source) {
  const std::string wanted = canonical_name(override_collective);
  if (!wanted.empty() && !candidate(wanted))
    throw InputError("command line", "--collective",
                     "must be one of all_reduce, all_gather, reduce_scatter, alltoall, broadcast, "
                     "reduce, sendrecv (got \"" + override_collective + "\")");
  if (!run.collective.empty() && !wanted.empty() && run.collective != wanted)
    throw InputError(source, "collective",
                     "the output names " + run.collective + " but --collective says " + wanted);

  NcclTestsIdentity id;
  id.ranks = run.ranks > 0 ? run.ranks : run.gpus_per_process;
  if (run.ranks > 0 && run.nodes > 0) {
    std::map<std::string, int64_t> per_host;
    for (const std::string& h : run.hosts) ++per_host[h];
    id.nodes = run.nodes;
    for (const auto& [host, n] : per_host) id.ranks_per_node = std::max(id.ranks_per_node, n);
  } else if (run.ranks == 0 && run.gpus_per_process > 0) {
    id.nodes = 1;  // no rank lines: the one process the nThread line describes
    id.ranks_per_node = run.gpus_per_process;
  }

  const TableEvidence e = read_table(run);
  id.collective = !run.collective.empty() ? run.collective : wanted;
  if (id.collective.empty()) {
    std::vector<const Candidate*> fit;
    for (const Candidate& c : kCandidates)
      if (fits(c, e, id.ranks)) fit.push_back(&c);
    if (fit.size() != 1) {
      std::string names;
      for (size_t i = 0; i < fit.size(); ++i)
        names += std::string(i == 0 ? "" : i + 1 == fit.size() ? " or " : ", ") + fit[i]->name;
      throw InputError(source, "collective",
                       "the output does not name its *_perf binary and its table (" +
                           describe(e, id.ranks) + ") fits " +
                           (fit.empty() ? "no nccl-tests collective" : names) +
                           "; name it with --collective");
    }
    id.collective = fit.front()->name;
  }
  if (id.ranks == 0) {
    if (const Candidate* c = candidate(id.collective)) id.ranks = ranks_from_table(c->family, e);
  }
  return id;
}

}  // namespace parallax::calib
