// libFuzzer target: efficiency profiles (read_profile).
#include "fuzz_input.hpp"
#include "parallax/costmodel/profile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  fuzz::json_object(data, size, [](JsonObjectReader& r) { (void)read_profile(r); });
  return 0;
}
