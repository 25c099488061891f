#pragma once
// Pipeline schedules as data (docs/design.md §6): for each pipeline rank the ordered list of steps
// (F|B, micro-batch, chunk) for GPipe, 1F1B and interleaved 1F1B. The simulator and the executor
// walk the same tables, so a schedule bug shows up in both.
//
// Chunks: with vpp virtual stages per rank, rank r's chunk c holds model stage c * pp + r
// (Megatron-LM's interleaving), each stage layers / (pp * vpp) layers. Without interleaving
// vpp = 1 and chunk is always 0.
#include <cstdint>
#include <string>
#include <vector>

#include "parallax/core/plan_spec.hpp"

namespace parallax {

enum class StepKind { forward, backward };

struct ScheduleStep {
  StepKind kind = StepKind::forward;
  int64_t micro_batch = 0;  // 0-based
  int64_t chunk = 0;        // 0-based, < vpp
  bool operator==(const ScheduleStep&) const = default;
};

struct ScheduleTable {
  Schedule schedule = Schedule::one_f_one_b;
  int64_t pp = 1;
  int64_t vpp = 1;
  int64_t num_micro_batches = 1;
  int64_t microbatch_group = 1;  // interleaved: micro-batches per virtual-stage group (pp by default)
  std::vector<std::vector<ScheduleStep>> ranks;  // ranks[r] = steps of pipeline rank r, in order
};

// Model stage (0 .. pp*vpp-1) that rank r's chunk c computes.
inline int64_t virtual_stage(int64_t pp, int64_t rank, int64_t chunk) { return chunk * pp + rank; }

// Megatron-Core's rule for the interleaved schedule's micro-batch groups of size `group`
// (megatron/core/pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving):
// pp <= group <= m, and the last group (m % group micro-batches) empty or at least pp, else the
// pipeline waits on itself. The broken rule, or empty when (pp, m, group) runs.
std::string microbatch_group_refusal(int64_t pp, int64_t m, int64_t group);

// The smallest group the rule admits for pp and m micro-batches (pp when pp divides m, m at most);
// 0 when m < pp, where no group runs.
int64_t smallest_microbatch_group(int64_t pp, int64_t m);

// Builds the table; microbatch_group 0 means pp (Megatron's default, the only choice of Megatron-LM
// before Megatron-Core 0.9). Throws InputError("schedule", "$.plan.<field>", rule) when the
// combination is not runnable (e.g. interleaved with m % pp != 0 and the default group, vpp > 1
// without interleaving).
ScheduleTable make_schedule(Schedule s, int64_t pp, int64_t vpp, int64_t num_micro_batches,
                            int64_t microbatch_group = 0);

// Text form, one line per rank, e.g. "rank 0: F0 F1 F2 F3 B0 F4 B1 ..." ("F3.1" = micro-batch 3,
// chunk 1, when vpp > 1).
std::string format_schedule(const ScheduleTable& t);

// Validity: every (micro-batch, chunk) appears once as F and once as B on every rank, F before B,
// and the table can run to completion given the cross-rank dependencies (F of stage v needs F of
// stage v-1; B of stage v needs B of stage v+1). Throws std::logic_error naming the first
// violation.
void check_schedule(const ScheduleTable& t);

}  // namespace parallax
