// libFuzzer target: plan files, model + cluster + job + plan (read_plan_file).
#include "fuzz_input.hpp"
#include "parallax/core/plan_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  fuzz::expect_input_error_only([&] { (void)read_plan_file(parse_json_text(fuzz::text(data, size), "fuzz"), "fuzz"); });
  return 0;
}
