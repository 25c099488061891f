// libFuzzer target: nccl-tests output (parse_nccl_tests).
#include "fuzz_input.hpp"
#include "parallax/calibration/nccl_tests.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  using namespace parallax::calib;
  fuzz::expect_input_error_only([&] { (void)parse_nccl_tests(fuzz::text(data, size), "fuzz"); });
  return 0;
}
