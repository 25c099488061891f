#include "parallax/executor/recorder.hpp"

namespace parallax::exec {

const char* to_string(Stream s) {
  switch (s) {
    case Stream::compute: return "compute";
    case Stream::tp: return "tp comm";
    case Stream::pp_send: return "pp send";
    case Stream::pp_recv: return "pp recv";
    case Stream::dp: return "dp comm";
    case Stream::optimizer: return "optimizer";
  }
  return "?";
}

void Recorder::add(const std::string& name, Stream stream, double start_s, double end_s,
                   double flops, double bytes, const std::string& shape, const std::string& group) {
  OpStats& s = stats_[name];
  s.stream = stream;
  s.shape = shape;
  s.group = group;
  s.calls += 1;
  s.total_s += end_s - start_s;
  s.flops += flops;
  s.bytes += bytes;
  if (keep_events) events_.push_back({name, stream, start_s, end_s - start_s, -1, -1});
}

}  // namespace parallax::exec
