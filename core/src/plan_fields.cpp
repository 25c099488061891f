#include "parallax/core/plan_fields.hpp"

#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "parallax/core/enum_names.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/core/spec_json.hpp"
#include "json_text.hpp"
#include "field_lookup.hpp"

namespace parallax {
namespace {

PlanField integer(const char* key, int64_t PlanSpec::*field, int64_t min, int64_t max, const char* flag,
                  const char* flag_default, const char* help, const char* megatron_flag = nullptr) {
  PlanField f{.key = key, .type = FieldType::integer, .integer = field, .min = min, .max = max};
  f.flag = flag;
  f.flag_default = flag_default;
  f.help = help;
  f.megatron_flag = megatron_flag;
  return f;
}

// A field a file must give.
PlanField required(PlanField f) {
  f.required = true;
  f.always_written = true;
  return f;
}

// A field a file may leave out: then `absent`.
PlanField optional(PlanField f, int64_t absent, bool always_written) {
  f.absent = absent;
  f.always_written = always_written;
  return f;
}

// A field a DeepSpeed config holds at `pointer`.
PlanField in_deepspeed(PlanField f, const char* pointer) {
  f.deepspeed_key = pointer;
  return f;
}

// A field with no flag of its own: `from` sets it (an error about it names that flag).
PlanField derived(PlanField f, const char* from) {
  f.flag = from;
  f.derived = true;
  return f;
}

PlanField on_off(const char* key, bool PlanSpec::*field, const char* flag, const char* help,
                 const char* megatron_flag, bool always_written = false) {
  PlanField f{.key = key, .type = FieldType::on_off, .on_off = field};
  f.always_written = always_written;
  f.flag = flag;
  f.help = help;
  f.megatron_flag = megatron_flag;
  return f;
}

PlanField name(const char* key, void (*read)(JsonObjectReader&, PlanSpec&),
               std::string (*spelling)(const PlanSpec&), const char* omitted_spelling, const char* flag,
               const char* flag_default, const char* help) {
  PlanField f{.key = key, .type = FieldType::name};
  f.always_written = omitted_spelling[0] == '\0';
  f.flag = flag;
  f.flag_default = flag_default;
  f.help = help;
  f.read = read;
  f.spelling = spelling;
  f.omitted_spelling = omitted_spelling;
  return f;
}

// One of `all`'s spellings at `key`, or `fallback` when absent.
template <class E, size_t N>
E enum_at(JsonObjectReader& r, const char* key, const std::array<E, N>& all, E fallback) {
  return enum_from(r.get_enum_or(key, names_of(all), to_string(fallback)), all);
}

void read_order(JsonObjectReader& r, PlanSpec& p) {
  p.order = r.get_string_or("order", p.order);
  if (!is_valid_order(p.order))
    r.fail("order", "must be tp, dp and pp (and optionally cp), each once, joined by '-' (got " +
                        describe_value(nlohmann::json(p.order)) + ")");
}

std::vector<PlanField> make_plan_fields() {
  const int64_t gpus = Limits::max_gpus, layers = Limits::max_layers, batch = Limits::max_global_batch;
  return {
      required(integer("tp", &PlanSpec::tp, 1, gpus, "--tp", "8", "tensor-parallel size",
                       "--tensor-model-parallel-size")),
      required(integer("pp", &PlanSpec::pp, 1, gpus, "--pp", "35", "pipeline-parallel size",
                       "--pipeline-model-parallel-size")),
      optional(integer("cp", &PlanSpec::cp, 1, gpus, "--cp", "1",
                       "context-parallel size (the sequence split over cp ranks)", "--context-parallel-size"),
               1, false),
      derived(required(integer("dp", &PlanSpec::dp, 1, gpus, nullptr, "", "")), "--gpus"),
      optional(integer("ep", &PlanSpec::ep, 1, gpus, "--ep", "1",
                       "expert-parallel size (mixture-of-experts models: experts split over ep ranks)"),
               1, false),
      optional(integer("etp", &PlanSpec::etp, 1, gpus, "--etp", "0",
                       "expert tensor-parallel size (0: tp, Megatron-Core's default)"),
               0, false),
      name(
          "moe_dispatcher",
          [](JsonObjectReader& r, PlanSpec& p) { p.moe_dispatcher = read_moe_dispatcher(r, "moe_dispatcher"); },
          [](const PlanSpec& p) { return std::string(to_string(p.moe_dispatcher)); }, "alltoall",
          "--moe-dispatcher", "alltoall",
          "MoE token dispatcher: alltoall (one copy per chosen expert, NCCL all-to-all) or the flex "
          "dispatcher's deepep / hybridep (one copy per node, then per rank)"),
      optional(integer("vpp", &PlanSpec::vpp, 1, layers, "--vpp", "1",
                       "virtual stages per pipeline rank (interleaved 1F1B)"),
               1, true),
      optional(integer("microbatch_group", &PlanSpec::microbatch_group, 1, batch, "--microbatch-group", "0",
                       "interleaved: micro-batches per virtual-stage group, pp <= N <= m, m % N zero or >= pp "
                       "(0 = pp; Megatron-Core --microbatch-group-size-per-virtual-pipeline-stage)"),
               0, false),
      in_deepspeed(required(integer("micro_batch", &PlanSpec::micro_batch, 1, batch, "--mbs", "1",
                                    "micro-batch size", "--micro-batch-size")),
                   "/train_micro_batch_size_per_gpu"),
      in_deepspeed(derived(optional(integer("num_micro_batches", &PlanSpec::num_micro_batches, 1, batch, nullptr,
                                            "", ""),
                                    0, false),
                           "--global-batch"),
                   "/gradient_accumulation_steps"),
      on_off("sequence_parallel", &PlanSpec::sequence_parallel, "--sp", "sequence parallelism (needs tp > 1)",
             "--sequence-parallel", true),
      name(
          "recompute",
          [](JsonObjectReader& r, PlanSpec& p) {
            p.recompute = enum_at(r, "recompute", kRecomputes, Recompute::none);
          },
          [](const PlanSpec& p) { return std::string(to_string(p.recompute)); }, "", "--recompute", "full",
          "activation recomputation: none|selective|full"),
      optional(integer("recompute_layers", &PlanSpec::recompute_layers, 0, layers, "--recompute-layers", "0",
                       "with full recompute: layers per stage recomputed (0 = all)"),
               0, true),
      in_deepspeed(optional(integer("zero", &PlanSpec::zero, 0, 3, "--zero", "0",
                                    "ZeRO stage 0-3 (1 = distributed optimizer)"),
                            0, true),
                   "/zero_optimization/stage"),
      optional(integer("first_stage_layers", &PlanSpec::first_stage_layers, 0, layers, "--first-stage-layers", "0",
                       "layers on the first pipeline stage (0 = the even share; Megatron-LM "
                       "--decoder-first-pipeline-num-layers)",
                       "--decoder-first-pipeline-num-layers"),
               0, true),
      optional(integer("last_stage_layers", &PlanSpec::last_stage_layers, 0, layers, "--last-stage-layers", "0",
                       "layers on the last pipeline stage (0 = the even share)",
                       "--decoder-last-pipeline-num-layers"),
               0, true),
      on_off("account_for_embedding_in_pipeline_split", &PlanSpec::embedding_in_split,
             "--account-for-embedding-in-pipeline-split",
             "the embedding counts as a layer of the pipeline split: the first (virtual) stage runs one layer "
             "fewer (Megatron-Core's flag of the same name)",
             "--account-for-embedding-in-pipeline-split"),
      on_off("account_for_loss_in_pipeline_split", &PlanSpec::loss_in_split, "--account-for-loss-in-pipeline-split",
             "the loss counts as a layer of the pipeline split: the last (virtual) stage runs one layer fewer "
             "(Megatron-Core's flag of the same name)",
             "--account-for-loss-in-pipeline-split"),
      // Its default follows vpp, read before it.
      name(
          "schedule",
          [](JsonObjectReader& r, PlanSpec& p) {
            p.schedule = enum_at(r, "schedule", kSchedules, p.vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b);
          },
          [](const PlanSpec& p) { return std::string(to_string(p.schedule)); }, "", "--schedule", "",
          "gpipe|1f1b|interleaved (default 1f1b; interleaved when vpp > 1)"),
      name("order", read_order, [](const PlanSpec& p) { return p.order; }, "", "--order", "tp-dp-pp",
           "rank placement order, innermost first"),
  };
}

}  // namespace

std::span<const PlanField> plan_fields() {
  static const std::vector<PlanField> fields = make_plan_fields();
  return fields;
}

const PlanField* plan_field(std::string_view key) { return field_lookup::by_key(plan_fields(), key); }

size_t plan_field_index(std::string_view key) { return field_lookup::index_of(plan_fields(), key, "plan"); }

const PlanField* plan_field_of_megatron_flag(std::string_view flag) { return field_lookup::by_megatron_flag(plan_fields(), flag); }

}  // namespace parallax
