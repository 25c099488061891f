// libFuzzer target: node description JSON (read_node_description).
#include "fuzz_input.hpp"
#include "parallax/topologies/node_description.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  fuzz::json_object(data, size, [](JsonObjectReader& r) { (void)read_node_description(r); });
  return 0;
}
