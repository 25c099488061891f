#pragma once
// Argument pieces the Megatron-LM and Megatron-DeepSpeed exports share. Internal to the export
// library.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "parallax/core/error.hpp"
#include "parallax/core/job_fields.hpp"
#include "parallax/core/megatron_conventions.hpp"
#include "parallax/core/plan_fields.hpp"
#include "parallax/core/plan_file.hpp"

namespace parallax::launch_args {

// The shortest decimal that reads back as x ("8", "0.5"): a flag's number as a user writes it.
inline std::string number_text(double x) {
  char text[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, x);
    if (std::strtod(text, nullptr) == x) break;
  }
  return text;
}

inline void add(std::vector<std::string>& a, const std::string& flag, int64_t v) {
  a.push_back(flag);
  a.push_back(std::to_string(v));
}

// The plan fields' one-to-one Megatron-LM flags (plan_fields.hpp), in `keys`' order, each where
// the plan differs from what the flag's absence means: a switch that is on, an integer other than
// its absent value (a field every plan gives, always).
inline void add_plan_flags(std::vector<std::string>& a, const PlanSpec& p, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    const PlanField& field = *plan_field(key);
    if (field.type == FieldType::on_off) {
      if (p.*field.on_off) a.push_back(field.megatron_flag);
    } else if (field.required || p.*field.integer != field.absent) {
      add(a, field.megatron_flag, p.*field.integer);
    }
  }
}

// The Megatron-LM export's plan flags: add() places the named fields in its grouping, rest()
// writes every other field that has a one-to-one flag, in the table's order, so that a new
// field's flag reaches the launch without an edit here.
class PlanFlags {
 public:
  PlanFlags(std::vector<std::string>& a, const PlanSpec& p) : a_(a), p_(p) {}
  void add(std::initializer_list<const char*> keys) {
    add_plan_flags(a_, p_, keys);
    placed_.insert(placed_.end(), keys.begin(), keys.end());
  }
  void rest() {
    for (const PlanField& f : plan_fields()) {
      if (f.megatron_flag == nullptr) continue;
      if (std::find(placed_.begin(), placed_.end(), std::string_view(f.key)) == placed_.end()) add({f.key});
    }
  }

 private:
  std::vector<std::string>& a_;
  const PlanSpec& p_;
  std::vector<std::string_view> placed_;
};

// The job fields' one-to-one Megatron-LM flags (job_fields.hpp), in `keys`' order: integers, each
// always said (the batch).
inline void add_job_flags(std::vector<std::string>& a, const JobSpec& j, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    const JobField& field = *job_field(key);
    add(a, field.megatron_flag, j.*field.integer);
  }
}

// The model's fields by their Megatron-LM flags (megatron_conventions.hpp), in `fields`' order.
inline void add_model_flags(std::vector<std::string>& a, const ModelSpec& m,
                            std::initializer_list<int64_t ModelSpec::*> fields) {
  for (int64_t ModelSpec::*field : fields) add(a, megatron::model_flag_of(field), m.*field);
}

// Megatron's dropout defaults to 0.1 on both; a model that says otherwise says so.
inline void add_dropout(std::vector<std::string>& a, const ModelSpec& m) {
  if (m.dropout == megatron::kDropout) return;
  std::ostringstream d;
  d << m.dropout;
  a.insert(a.end(), {"--hidden-dropout", d.str(), "--attention-dropout", d.str()});
}

// Placeholders, not planned: a cosine schedule from 3e-4 (neither trainer has a default --lr),
// and --train-iters (or samples, which both require): the plan's tokens, else a short
// measurement run of 100 iterations. A benchmark (benchmark_iters > 0, plan --shortlist) runs
// that many iterations, logs every one (the log plan --measured reads) and skips evaluation.
inline void add_schedule(std::vector<std::string>& a, const PlanFile& f, int64_t benchmark_iters = 0) {
  a.insert(a.end(), {"--lr", "3.0e-4", "--min-lr", "3.0e-5", "--lr-decay-style", "cosine",
                     "--lr-warmup-fraction", "0.01"});
  if (benchmark_iters > 0) {
    add(a, "--train-iters", benchmark_iters);
    a.insert(a.end(), {"--log-interval", "1", "--eval-iters", "0"});
    return;
  }
  constexpr int64_t kMeasurementIters = 100;
  const double per_iter = static_cast<double>(f.job.global_batch * f.model.seq_len);
  add(a, "--train-iters",
      f.job.tokens > 0 ? static_cast<int64_t>((f.job.tokens + per_iter - 1) / per_iter) : kMeasurementIters);
}

}  // namespace parallax::launch_args
