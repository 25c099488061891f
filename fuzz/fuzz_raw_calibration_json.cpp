// libFuzzer target: raw microbenchmark samples (raw_from_json).
#include "fuzz_input.hpp"
#include "parallax/calibration/samples.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  fuzz::expect_input_error_only([&] { (void)calib::raw_from_json(parse_json_text(fuzz::text(data, size), "fuzz"), "fuzz"); });
  return 0;
}
