// libFuzzer target: NCCL topology XML dumps (import_nccl_topology_xml).
#include "fuzz_input.hpp"
#include "parallax/topologies/import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  fuzz::expect_input_error_only([&] { (void)import_nccl_topology_xml(fuzz::text(data, size), "fuzz"); });
  return 0;
}
