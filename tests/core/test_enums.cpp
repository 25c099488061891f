#include "core_test_util.hpp"

namespace parallax::test {

TEST_CASE("enums: spellings match the JSON files", "[core][enums]") {
  CHECK(std::string(to_string(Dtype::fp32)) == "fp32");
  CHECK(std::string(to_string(Dtype::tf32)) == "tf32");
  CHECK(std::string(to_string(Dtype::bf16)) == "bf16");
  CHECK(std::string(to_string(Dtype::fp16)) == "fp16");
  CHECK(std::string(to_string(Dtype::fp8)) == "fp8");
  CHECK(std::string(to_string(Activation::gelu)) == "gelu");
  CHECK(std::string(to_string(Activation::swiglu)) == "swiglu");
  CHECK(std::string(to_string(Position::learned)) == "learned");
  CHECK(std::string(to_string(Position::rope)) == "rope");
  CHECK(std::string(to_string(Position::alibi)) == "alibi");
  CHECK(std::string(to_string(Norm::layernorm)) == "layernorm");
  CHECK(std::string(to_string(Norm::rmsnorm)) == "rmsnorm");
  CHECK(std::string(to_string(Recompute::none)) == "none");
  CHECK(std::string(to_string(Recompute::selective)) == "selective");
  CHECK(std::string(to_string(Recompute::full)) == "full");
  CHECK(std::string(to_string(Schedule::gpipe)) == "gpipe");
  CHECK(std::string(to_string(Schedule::one_f_one_b)) == "1f1b");
  CHECK(std::string(to_string(Schedule::interleaved)) == "interleaved");
  CHECK(std::string(to_string(ParamBytesConvention::b16)) == "16");
  CHECK(std::string(to_string(ParamBytesConvention::b18)) == "18");
  CHECK(std::string(to_string(ParamBytesConvention::b20)) == "20");
}

TEST_CASE("enums: element and parameter byte counts", "[core][enums]") {
  CHECK(dtype_bytes(Dtype::fp32) == 4);
  CHECK(dtype_bytes(Dtype::tf32) == 4);  // stored as fp32
  CHECK(dtype_bytes(Dtype::bf16) == 2);
  CHECK(dtype_bytes(Dtype::fp16) == 2);
  CHECK(dtype_bytes(Dtype::fp8) == 1);
  CHECK(bytes_per_param(ParamBytesConvention::b16) == 16);
  CHECK(bytes_per_param(ParamBytesConvention::b18) == 18);
  CHECK(bytes_per_param(ParamBytesConvention::b20) == 20);
}

TEST_CASE("InputError: one line, source: path: rule", "[core][error]") {
  const InputError e("model.json", "$.layers", "must be an integer >= 1 (got -3)");
  CHECK(std::string(e.what()) == "model.json: $.layers: must be an integer >= 1 (got -3)");
  CHECK(e.source() == "model.json");
  CHECK(e.path() == "$.layers");
  CHECK(e.rule() == "must be an integer >= 1 (got -3)");
  const InputError multi("a\nb.json", "$", "x\ty\r");
  CHECK(std::string(multi.what()) == "a\\nb.json: $: x\\ty\\r");
  CHECK(kExitBadInput == 2);
}

}  // namespace parallax::test
