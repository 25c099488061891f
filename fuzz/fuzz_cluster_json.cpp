// libFuzzer target: cluster JSON (read_cluster).
#include "fuzz_input.hpp"
#include "parallax/core/spec_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  fuzz::json_object(data, size, [](JsonObjectReader& r) { (void)read_cluster(r); });
  return 0;
}
