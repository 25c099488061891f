// libFuzzer target: nvidia-smi topo -m output (import_nvidia_smi_topo).
#include "fuzz_input.hpp"
#include "parallax/topologies/import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  fuzz::expect_input_error_only([&] { (void)import_nvidia_smi_topo(fuzz::text(data, size), "fuzz"); });
  return 0;
}
