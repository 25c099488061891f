// libFuzzer target: GPU JSON (read_gpu).
#include "fuzz_input.hpp"
#include "parallax/core/spec_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  fuzz::json_object(data, size, [](JsonObjectReader& r) { (void)read_gpu(r); });
  return 0;
}
