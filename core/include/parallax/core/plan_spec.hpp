#pragma once
// How a job is split over GPUs. Invariants (checked by validate_plan):
//   tp * pp * dp == GPUs used;  micro_batch * num_micro_batches * dp == global batch.
#include <cstdint>
#include <string>

namespace parallax {

enum class Recompute { none, selective, full };
enum class Schedule { gpipe, one_f_one_b, interleaved };

struct PlanSpec {
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t dp = 1;
  int64_t vpp = 1;  // virtual stages (model chunks) per pipeline rank; > 1 only with interleaved
  int64_t micro_batch = 1;
  int64_t num_micro_batches = 1;  // per pipeline (per data-parallel replica) per iteration
  bool sequence_parallel = false;
  Recompute recompute = Recompute::none;
  int64_t recompute_layers = 0;  // with full recompute: layers per stage recomputed; 0 = all
  int64_t zero = 0;              // 0..3; 1 = distributed optimizer
  Schedule schedule = Schedule::one_f_one_b;
  std::string order = "tp-dp-pp";  // placement, innermost first

  int64_t gpus() const { return tp * pp * dp; }
  bool operator==(const PlanSpec&) const = default;
};

const char* to_string(Recompute r);
const char* to_string(Schedule s);
// True when order names tp, dp and pp (and optionally cp) once each, joined by '-'.
bool is_valid_order(const std::string& order);

}  // namespace parallax
