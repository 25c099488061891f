#pragma once
// Chrome / Perfetto trace of a simulated iteration: {"traceEvents": [...]} with one complete
// event (ph "X", microseconds) per op, one pid per pipeline rank, one tid per stream,
// process_name / thread_name metadata and memory counters (ph "C").
#include <string>

#include "parallax/simulator/simulate.hpp"

namespace parallax {

// Needs a result simulated with record_ops (and record_memory for the counters).
std::string chrome_trace_json(const SimResult& r);
// Writes chrome_trace_json atomically.
void write_chrome_trace(const SimResult& r, const std::string& path);

// One row per rank over `width` columns: 'F' forward, 'B' backward, 'f'/'b' TP communication of
// a forward/backward, 'o' optimizer, '.' idle (whichever covers most of the column).
std::string text_timeline(const SimResult& r, int width);

}  // namespace parallax
