// libFuzzer target: Megatron-LM and Megatron-DeepSpeed training logs (parse_megatron_log).
#include "fuzz_input.hpp"
#include "parallax/calibration/megatron_log.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  using namespace parallax::calib;
  fuzz::expect_input_error_only([&] { (void)parse_megatron_log(fuzz::text(data, size), "fuzz"); });
  return 0;
}
