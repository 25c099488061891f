#include "parallax/executor/measurements.hpp"

#include <sys/resource.h>

namespace parallax::exec {

using nlohmann::json;

double peak_resident_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0;  // Linux reports KiB
}

json rank_measurements(const Recorder& rec, const ProcessGroups& g) {
  json ops = json::array(), colls = json::array();
  for (const auto& [name, s] : rec.stats()) {
    json o = {{"name", name}, {"stream", to_string(s.stream)}, {"calls", s.calls},
              {"total_s", s.total_s}, {"shape", s.shape}};
    if (s.stream == Stream::compute || s.stream == Stream::optimizer) {
      o["flops"] = s.flops;
      o["flop_per_s"] = s.total_s > 0 ? s.flops / s.total_s : 0.0;
      ops.push_back(o);
    } else {
      o["group"] = s.group;
      o["bytes"] = s.bytes;
      colls.push_back(o);
    }
  }
  return {{"rank", g.world.rank},
          {"tp_rank", g.coords.tp},
          {"pp_rank", g.coords.pp},
          {"dp_rank", g.coords.dp},
          {"cp_rank", g.coords.cp},
          {"peak_resident_bytes", peak_resident_bytes()},
          {"ops", ops},
          {"collectives", colls}};
}

json rank_trace_events(const Recorder& rec, const ProcessGroups& g) {
  json ev = json::array();
  const int pid = g.world.rank;
  ev.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0},
                {"args", {{"name", "rank " + std::to_string(pid) + " (tp " +
                                       std::to_string(g.coords.tp) + ", pp " +
                                       std::to_string(g.coords.pp) + ", dp " +
                                       std::to_string(g.coords.dp) + ", cp " +
                                       std::to_string(g.coords.cp) + ")"}}}});
  for (int s = 0; s <= static_cast<int>(Stream::optimizer); ++s)
    ev.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", s},
                  {"args", {{"name", to_string(static_cast<Stream>(s))}}}});
  for (const auto& e : rec.events()) {
    json x = {{"ph", "X"}, {"name", e.name}, {"cat", to_string(e.stream)}, {"pid", pid},
              {"tid", static_cast<int>(e.stream)}, {"ts", e.start_s * 1e6},
              {"dur", e.duration_s * 1e6}};
    if (e.micro_batch >= 0)
      x["args"] = {{"micro_batch", e.micro_batch}, {"chunk", e.chunk}};
    ev.push_back(x);
  }
  return ev;
}

std::vector<json> gather_json(const json& mine, const Group& world) {
  const std::string s = mine.dump();
  int n = static_cast<int>(s.size());
  std::vector<int> sizes(static_cast<size_t>(world.size));
  MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, world.comm);
  std::vector<int> displs(static_cast<size_t>(world.size), 0);
  int total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    displs[i] = total;
    total += sizes[i];
  }
  std::string all(world.rank == 0 ? static_cast<size_t>(total) : 0, '\0');
  MPI_Gatherv(s.data(), n, MPI_CHAR, all.data(), sizes.data(), displs.data(), MPI_CHAR, 0,
              world.comm);
  std::vector<json> out;
  if (world.rank == 0)
    for (size_t i = 0; i < sizes.size(); ++i)
      out.push_back(json::parse(all.substr(static_cast<size_t>(displs[i]), static_cast<size_t>(sizes[i]))));
  return out;
}

}  // namespace parallax::exec
