// libFuzzer target: job JSON (read_job).
#include "fuzz_input.hpp"
#include "parallax/core/spec_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  fuzz::json_object(data, size, [](JsonObjectReader& r) { (void)read_job(r); });
  return 0;
}
