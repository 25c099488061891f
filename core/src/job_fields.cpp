#include "parallax/core/job_fields.hpp"

#include <array>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "parallax/core/attention_kernel_io.hpp"
#include "parallax/core/enum_names.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/core/stack_spec.hpp"
#include "field_lookup.hpp"

namespace parallax {
namespace {

constexpr double kMaxPricePerGpuHour = 1e6;
// Tokens the most loaded expert-parallel rank receives over the mean: at most every token of the
// job on one rank of a million.
constexpr double kMaxMoeImbalance = 1e6;

JobField integer(const char* key, int64_t JobSpec::*field, double min, double max) {
  return {.key = key, .type = JobFieldType::integer, .integer = field, .min = min, .max = max};
}

// A number field; its absence means `absent`.
JobField number(const char* key, double JobSpec::*field, double min, double max, double absent) {
  return {.key = key, .type = JobFieldType::number, .number = field, .min = min, .max = max, .absent = absent};
}

JobField name(const char* key, void (*read)(JsonObjectReader&, JobSpec&), nlohmann::json (*value)(const JobSpec&)) {
  return {.key = key, .type = JobFieldType::name, .read = read, .value = value};
}

// A field the job's JSON always has.
JobField always(JobField f) {
  f.always_written = true;
  return f;
}

// The flag that sets the field, its default as typed and its help.
JobField flag(JobField f, const char* flag, const char* flag_default, const char* help) {
  f.flag = flag;
  f.flag_default = flag_default;
  f.help = help;
  return f;
}

void read_dtype(JsonObjectReader& r, JobSpec& j) {
  j.dtype = enum_from(r.get_enum_or("dtype", names_of(kDtypes), to_string(Dtype::bf16)), kDtypes);
}

void read_bytes_per_param(JsonObjectReader& r, JobSpec& j) {
  const int64_t bpp = r.get_int_or("bytes_per_param", 16, 20, 18);
  if (bpp != 16 && bpp != 18 && bpp != 20)
    r.fail("bytes_per_param", "must be 16, 18 or 20 (got " + std::to_string(bpp) + ")");
  constexpr std::array kParamBytes{ParamBytesConvention::b16, ParamBytesConvention::b18, ParamBytesConvention::b20};
  j.bytes_per_param = enum_from(std::to_string(bpp), kParamBytes);
}

// The stack, and what the job takes from its preset unless it says otherwise (apply_stack): the
// rows below it override.
void read_framework(JsonObjectReader& r, JobSpec& j) {
  j.framework = r.get_string_or("framework", "megatron-lm");
  if (j.framework.empty()) r.fail("framework", "must not be empty");
  const StackSpec stack = stack_or_default(j.framework);
  apply_stack(stack, j);
  j.attention_kernels = resolve_attention_kernels("", stack);
}

void read_attention(JsonObjectReader& r, JobSpec& j) {
  if (r.has("attention"))
    j.attention = r.get_enum("attention", {"unfused", "fused"}) == "fused" ? Attention::fused : Attention::unfused;
}

void read_kernels(JsonObjectReader& r, JobSpec& j) {
  if (r.has("kernels"))
    j.kernels = r.get_enum("kernels", {"fused", "eager"}) == "eager" ? Kernels::eager : Kernels::fused;
}

// The kernel the job names, for every GPU, instead of the stack's per architecture.
void read_attention_kernel(JsonObjectReader& r, JobSpec& j) {
  if (!r.has("attention_kernel")) return;
  j.attention_kernel = r.get_string("attention_kernel");
  if (j.attention_kernel.empty()) r.fail("attention_kernel", "must name an attention kernel preset");
  j.attention_kernels = {load_attention_kernel(j.attention_kernel)};
}

std::vector<JobField> make_job_fields() {
  JobField global_batch = flag(always(integer("global_batch", &JobSpec::global_batch, 1,
                                              static_cast<double>(Limits::max_global_batch))),
                               "--global-batch", "1920", "sequences per iteration");
  global_batch.required = true;
  global_batch.megatron_flag = "--global-batch-size";
  JobField bytes_per_param =
      flag(always(name("bytes_per_param", read_bytes_per_param,
                       [](const JobSpec& j) { return nlohmann::json(parallax::bytes_per_param(j.bytes_per_param)); })),
           "--bytes-per-param", "18", "weights+grads+optimizer bytes per parameter: 16|18|20");
  bytes_per_param.integer_flag = true;
  bytes_per_param.min = 16;
  bytes_per_param.max = 20;
  JobField framework = flag(always(name("framework", read_framework,
                                        [](const JobSpec& j) { return nlohmann::json(j.framework); })),
                            "--stack", "",
                            "software stack: presets/stacks/ says how it computes attention, the profile holds its "
                            "scale (default: the profile's, megatron-lm on the GPU profiles)");
  framework.alias = "--framework";
  JobField unpad{.key = "attention_unpad", .type = JobFieldType::on_off, .on_off = &JobSpec::attention_unpad};
  return {
      global_batch,
      flag(always(number("tokens", &JobSpec::tokens, 0, Limits::max_tokens, 0)), "--tokens", "",
           "total training tokens"),
      flag(always(name("dtype", read_dtype, [](const JobSpec& j) { return nlohmann::json(to_string(j.dtype)); })),
           "--dtype", "bf16", "training dtype: fp32|tf32|bf16|fp16|fp8"),
      always(name(
          "optimizer", [](JsonObjectReader& r, JobSpec& j) { j.optimizer = r.get_enum_or("optimizer", {"adam"}, "adam"); },
          [](const JobSpec& j) { return nlohmann::json(j.optimizer); })),
      flag(always(number("price_per_gpu_hour_usd", &JobSpec::price_per_gpu_hour_usd, 0, kMaxPricePerGpuHour, 0)),
           "--price", "", "price per GPU-hour (USD)"),
      bytes_per_param,
      framework,
      // The stack's unless the job says otherwise: after framework.
      flag(always(name("attention", read_attention,
                       [](const JobSpec& j) { return nlohmann::json(to_string(j.attention)); })),
           "--attention", "",
           "the attention core, overriding the stack's: fused (blocked, no s x s scores; the executor's CPU "
           "backend runs its own blocked kernel) or unfused"),
      always(name("kernels", read_kernels, [](const JobSpec& j) { return nlohmann::json(to_string(j.kernels)); })),
      flag(name("attention_kernel", read_attention_kernel,
                [](const JobSpec& j) { return j.attention_kernel.empty() ? nlohmann::json() : nlohmann::json(j.attention_kernel); }),
           "--attention-kernel", "",
           "fused attention kernel (presets/attention/: flash-attention-2, flash-attention-3, cudnn, "
           "triton-flash) or JSON file; default: the stack's for the GPU"),
      unpad,
      number("moe_imbalance", &JobSpec::moe_imbalance, 1, kMaxMoeImbalance, 1),
  };
}

}  // namespace

std::span<const JobField> job_fields() {
  static const std::vector<JobField> fields = make_job_fields();
  return fields;
}

void read_job_field(JsonObjectReader& r, const JobField& f, JobSpec& j) {
  switch (f.type) {
    case JobFieldType::integer: {
      const auto min = static_cast<int64_t>(f.min), max = static_cast<int64_t>(f.max);
      j.*f.integer = f.required ? r.get_int(f.key, min, max) : r.get_int_or(f.key, min, max, static_cast<int64_t>(f.absent));
      break;
    }
    case JobFieldType::number:
      j.*f.number = r.get_number_or(f.key, f.min, f.max, f.absent);
      break;
    case JobFieldType::on_off:
      j.*f.on_off = r.get_bool_or(f.key, false);
      break;
    case JobFieldType::name:
      f.read(r, j);
      break;
  }
}

void write_job_field(const JobField& f, const JobSpec& j, nlohmann::json& out) {
  switch (f.type) {
    case JobFieldType::integer:
      if (f.always_written || static_cast<double>(j.*f.integer) != f.absent) out[f.key] = j.*f.integer;
      break;
    case JobFieldType::number:
      if (f.always_written || j.*f.number != f.absent) out[f.key] = j.*f.number;
      break;
    case JobFieldType::on_off:
      if (f.always_written || j.*f.on_off) out[f.key] = j.*f.on_off;
      break;
    case JobFieldType::name:
      if (nlohmann::json v = f.value(j); !v.is_null()) out[f.key] = std::move(v);
      break;
  }
}

const JobField* job_field(std::string_view key) { return field_lookup::by_key(job_fields(), key); }

size_t job_field_index(std::string_view key) { return field_lookup::index_of(job_fields(), key, "job"); }

const JobField* job_field_of_megatron_flag(std::string_view flag) { return field_lookup::by_megatron_flag(job_fields(), flag); }

}  // namespace parallax
