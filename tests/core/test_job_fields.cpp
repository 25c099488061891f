// The job's field table (job_fields.hpp) against the job it describes: every field reads and
// writes its own member, under its own key, with its own rule.
#include <set>
#include <string>

#include "core_test_util.hpp"
#include "parallax/core/job_fields.hpp"
#include "parallax/core/presets.hpp"

namespace parallax::test {

TEST_CASE("job fields: keys, flags and Megatron-LM flags are each named once, of a type their writers take",
          "[core][job]") {
  std::set<std::string> keys, flags, megatron;
  for (const JobField& f : job_fields()) {
    CHECK(keys.insert(f.key).second);
    if (f.flag != nullptr) CHECK(flags.insert(f.flag).second);
    if (f.alias != nullptr) CHECK(flags.insert(f.alias).second);
    // The exporters and the importer say a one-to-one flag's integer.
    if (f.megatron_flag != nullptr) CHECK(megatron.insert(f.megatron_flag).second);
    if (f.megatron_flag != nullptr) CHECK(f.type == JobFieldType::integer);
    if (f.type == JobFieldType::name) CHECK((f.read != nullptr && f.value != nullptr));
    CHECK(job_field(f.key) == &f);
    CHECK(job_fields()[job_field_index(f.key)].key == f.key);
  }
  CHECK(job_field("no_such_field") == nullptr);
  CHECK_THROWS_AS(job_field_index("no_such_field"), std::out_of_range);
  CHECK(job_field_of_megatron_flag("--global-batch-size") == job_field("global_batch"));
  CHECK(job_field_of_megatron_flag("--micro-batch-size") == nullptr);
}

TEST_CASE("job fields: a job with every field off its default reads back equal", "[core][job]") {
  // Every key of the job's JSON (docs/design.md's job file), each off its default: the deepspeed
  // stack's preset computes attention unfused with fused kernels, so both are overridden here.
  const json in = {{"global_batch", 3},
                   {"tokens", 5e9},
                   {"dtype", "fp16"},
                   {"optimizer", "adam"},
                   {"price_per_gpu_hour_usd", 2.5},
                   {"bytes_per_param", 20},
                   {"framework", "deepspeed"},
                   {"attention", "fused"},
                   {"kernels", "eager"},
                   {"attention_kernel", "flash-attention-2"},
                   {"attention_unpad", true},
                   {"moe_imbalance", 1.5}};
  const JobSpec j = read_as(in, read_job);
  CHECK(j.global_batch == 3);
  CHECK(j.tokens == 5e9);
  CHECK(j.dtype == Dtype::fp16);
  CHECK(j.price_per_gpu_hour_usd == 2.5);
  CHECK(j.bytes_per_param == ParamBytesConvention::b20);
  CHECK(j.framework == "deepspeed");
  CHECK(j.attention == Attention::fused);
  CHECK(j.kernels == Kernels::eager);
  CHECK(j.attention_kernel == "flash-attention-2");
  REQUIRE(j.attention_kernels.size() == 1);
  CHECK(j.attention_kernels[0].name == load_attention_kernel("flash-attention-2").name);
  CHECK(j.attention_unpad);
  CHECK(j.moe_imbalance == 1.5);
  CHECK(to_json(j) == in);
  CHECK(in.size() == job_fields().size());
}

TEST_CASE("job fields: a field at its default is left out where the table says", "[core][job]") {
  const JobSpec j = read_as(base_job(), read_job);
  const json out = to_json(j);
  for (const JobField& f : job_fields()) {
    INFO(f.key);
    CHECK(out.contains(f.key) == f.always_written);
  }
  // The three a job file of a dense job on its stack's kernel leaves out.
  CHECK(!out.contains("attention_kernel"));
  CHECK(!out.contains("attention_unpad"));
  CHECK(!out.contains("moe_imbalance"));
}

TEST_CASE("job fields: each integer and number field is read with its own rule", "[core][job]") {
  for (const JobField& f : job_fields()) {
    if (f.type != JobFieldType::integer && f.type != JobFieldType::number) continue;
    INFO(f.key);
    json j = base_job();
    j[f.key] = f.min - 1;
    require_input_error([&] { read_as(j, read_job); }, std::string("$.") + f.key, {">= "});
    j[f.key] = f.max * 2;
    require_input_error([&] { read_as(j, read_job); }, std::string("$.") + f.key, {"<= "});
  }
}

}  // namespace parallax::test
