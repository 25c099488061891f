// libFuzzer target: TorchTitan training logs (parse_torchtitan_log, looks_like_torchtitan_log).
#include "fuzz_input.hpp"
#include "parallax/calibration/torchtitan_log.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  using namespace parallax::calib;
  const std::string text = fuzz::text(data, size);
  (void)looks_like_torchtitan_log(text);
  fuzz::expect_input_error_only([&] { (void)parse_torchtitan_log(text, "fuzz"); });
  return 0;
}
