#include "core_test_util.hpp"

namespace parallax::test {

TEST_CASE("job: defaults", "[core][job]") {
  const JobSpec j = read_as(base_job(), read_job);
  CHECK(j.global_batch == 1536);
  CHECK(j.tokens == 0);
  CHECK(j.dtype == Dtype::bf16);
  CHECK(j.optimizer == "adam");
  CHECK(j.price_per_gpu_hour_usd == 0);
  CHECK(j.bytes_per_param == ParamBytesConvention::b18);
  CHECK(j.framework == "megatron-lm");
}

TEST_CASE("job: field rules", "[core][job]") {
  json j = base_job();
  j["global_batch"] = 0;
  require_input_error([&] { read_as(j, read_job, "job.json"); }, "$.global_batch",
                      {"job.json", ">= 1 (got 0)"});
  j = base_job();
  j["global_batch"] = 1e12;
  require_input_error([&] { read_as(j, read_job); }, "$.global_batch", {"<= 1073741824"});
  j = base_job();
  j["tokens"] = -1;
  require_input_error([&] { read_as(j, read_job); }, "$.tokens", {">= 0 (got -1)"});
  j = base_job();
  j["dtype"] = "int8";
  require_input_error([&] { read_as(j, read_job); }, "$.dtype",
                      {"\"fp32\", \"tf32\", \"bf16\", \"fp16\", \"fp8\"", "got \"int8\""});
  j = base_job();
  j["optimizer"] = "sgd";
  require_input_error([&] { read_as(j, read_job); }, "$.optimizer",
                      {"must be one of \"adam\" (got \"sgd\")"});
  j = base_job();
  j["price_per_gpu_hour_usd"] = -2;
  require_input_error([&] { read_as(j, read_job); }, "$.price_per_gpu_hour_usd", {">= 0 (got -2)"});
  j = base_job();
  j["bytes_per_param"] = 17;
  require_input_error([&] { read_as(j, read_job); }, "$.bytes_per_param",
                      {"must be 16, 18 or 20 (got 17)"});
  j["bytes_per_param"] = 18.5;
  require_input_error([&] { read_as(j, read_job); }, "$.bytes_per_param",
                      {"must be an integer (got 18.5)"});
  j = base_job();
  j["framework"] = "";
  require_input_error([&] { read_as(j, read_job); }, "$.framework", {"must not be empty"});
}

TEST_CASE("job: write then read round trips", "[core][job][roundtrip]") {
  JobSpec j;
  j.global_batch = 1920;
  j.tokens = 270e9;
  j.dtype = Dtype::fp16;
  j.price_per_gpu_hour_usd = 2.21;
  j.bytes_per_param = ParamBytesConvention::b20;
  j.framework = "deepspeed";
  const json out = to_json(j);
  const JobSpec back = read_as(parse_json_text(out.dump(), "j.json"), read_job);
  CHECK(back.global_batch == j.global_batch);
  CHECK(back.tokens == j.tokens);
  CHECK(back.dtype == j.dtype);
  CHECK(back.optimizer == j.optimizer);
  CHECK(back.price_per_gpu_hour_usd == j.price_per_gpu_hour_usd);
  CHECK(back.bytes_per_param == j.bytes_per_param);
  CHECK(back.framework == j.framework);
  CHECK(to_json(back) == out);
}

}  // namespace parallax::test
