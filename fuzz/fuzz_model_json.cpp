// libFuzzer target: model JSON (read_model).
#include "fuzz_input.hpp"
#include "parallax/core/spec_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  fuzz::json_object(data, size, [](JsonObjectReader& r) { (void)read_model(r); });
  return 0;
}
