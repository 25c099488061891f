#include "parallax/simulator/trace.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <nlohmann/json.hpp>
#include <vector>

#include "parallax/core/atomic_file.hpp"

namespace parallax {
namespace {

constexpr SimStream kStreams[] = {SimStream::compute, SimStream::tp, SimStream::pp_send,
                                  SimStream::pp_recv, SimStream::dp, SimStream::cp,
                                  SimStream::ep};

double us(double s) { return s * 1e6; }

}  // namespace

std::string chrome_trace_json(const SimResult& r) {
  using nlohmann::json;
  json events = json::array();
  for (size_t rank = 0; rank < r.ranks.size(); ++rank) {
    const int pid = static_cast<int>(rank);
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"name", "pipeline rank " + std::to_string(rank)}}}});
    events.push_back({{"ph", "M"},
                      {"name", "process_sort_index"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"sort_index", pid}}}});
    for (SimStream s : kStreams) {
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", pid},
                        {"tid", static_cast<int>(s)},
                        {"args", {{"name", to_string(s)}}}});
    }
  }
  const auto add = [&events](const SimOp& op, const std::string& kind, int pid, SimStream s,
                             int peer) {
    json args = {{"bytes", op.bytes}};
    if (op.micro_batch >= 0) args["micro_batch"] = op.micro_batch;
    if (op.chunk >= 0) args["chunk"] = op.chunk;
    if (peer >= 0) args["peer_rank"] = peer;
    std::string name = kind;
    if (op.micro_batch >= 0) {
      name += ' ';  // appended, not " " + std::string: GCC 12's false -Wrestrict
      name += std::to_string(op.micro_batch);
    }
    events.push_back({{"ph", "X"},
                      {"name", name},
                      {"cat", to_string(s)},
                      {"pid", pid},
                      {"tid", static_cast<int>(s)},
                      {"ts", us(op.start_s)},
                      {"dur", us(op.duration_s)},
                      {"args", args}});
  };
  for (const SimOp& op : r.ops) {
    add(op, to_string(op.kind), op.rank, op.stream, op.peer);
    if (op.peer >= 0) {  // the receiver's side of a transfer
      const bool act = op.kind == SimOpKind::send_activation;
      add(op, act ? "recv act" : "recv grad", op.peer, SimStream::pp_recv, op.rank);
    }
  }
  for (size_t rank = 0; rank < r.ranks.size(); ++rank) {
    for (const MemorySample& m : r.ranks[rank].memory) {
      events.push_back({{"ph", "C"},
                        {"name", "memory"},
                        {"pid", static_cast<int>(rank)},
                        {"ts", us(m.time_s)},
                        {"args", {{"GB", m.bytes / 1e9}}}});
    }
  }
  json doc = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  return doc.dump() + "\n";
}

void write_chrome_trace(const SimResult& r, const std::string& path) {
  write_file_atomic(path, chrome_trace_json(r));
}

std::string text_timeline(const SimResult& r, int width) {
  const double span = r.iteration_time_s;
  const size_t w = static_cast<size_t>(std::max(width, 1));
  // Per rank and column: how long each character covers it; the longest wins.
  constexpr char kChars[] = {'.', 'F', 'B', 'f', 'b', 'o'};
  std::vector<std::vector<std::array<double, 6>>> cover(
      r.ranks.size(), std::vector<std::array<double, 6>>(w, std::array<double, 6>{}));
  for (const SimOp& op : r.ops) {
    const char drawn = kSimOpKinds[static_cast<size_t>(op.kind)].timeline;
    if (drawn == '\0') continue;  // communication streams other than TP are not drawn
    const auto c = static_cast<size_t>(std::find(std::begin(kChars), std::end(kChars), drawn) -
                                       std::begin(kChars));
    if (span <= 0) continue;
    const double col_s = span / static_cast<double>(w);
    const double a = op.start_s, b = op.start_s + op.duration_s;
    const size_t first = static_cast<size_t>(std::max(0.0, a / col_s));
    for (size_t k = first; k < w && static_cast<double>(k) * col_s < b; ++k) {
      const double lo = std::max(a, static_cast<double>(k) * col_s);
      const double hi = std::min(b, static_cast<double>(k + 1) * col_s);
      if (hi > lo) cover[static_cast<size_t>(op.rank)][k][c] += hi - lo;
    }
  }
  std::string out;
  for (size_t rank = 0; rank < r.ranks.size(); ++rank) {
    std::string label = "rank " + std::to_string(rank);
    label.resize(8, ' ');
    out += label;
    out += '|';
    const double col_s = span / static_cast<double>(w);
    for (size_t k = 0; k < w; ++k) {
      const auto& cv = cover[rank][k];
      double busy = 0;
      size_t best = 1;
      for (size_t c = 1; c < 6; ++c) {
        busy += cv[c];
        if (cv[c] > cv[best]) best = c;
      }
      out += busy * 2 >= col_s ? kChars[best] : kChars[0];
    }
    out += "|\n";
  }
  return out;
}

}  // namespace parallax
