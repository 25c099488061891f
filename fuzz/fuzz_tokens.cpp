// libFuzzer target: token files, raw uint16 and llm.c format (TokenSource::from_file; vocab 50257, seq 8).
#include "fuzz_input.hpp"
#include "parallax/executor/data.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  const std::string path = fuzz::as_file(data, size, ".bin");
  fuzz::expect_input_error_only([&] { (void)exec::TokenSource::from_file(path, 50257, 8); });
  return 0;
}
