// libFuzzer target: safetensors checkpoint shards: header, metadata, data (read_shard_file), and
// the reassembly of what it accepts into global tensors (assemble), whose indices come from the
// shard metadata, and their renaming into the executor's layout (Conv1D transposes, Llama parts
// joined: to_executor_layout).
#include "fuzz_input.hpp"
#include "parallax/executor/checkpoint/checkpoint_layout.hpp"
#include "parallax/executor/checkpoint/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parallax;
  const std::string path = fuzz::as_file(data, size, ".safetensors");
  fuzz::expect_input_error_only([&] {
    const exec::ShardFile f = exec::read_shard_file(path);
    (void)exec::to_executor_layout(exec::assemble({f}), path);
  });
  return 0;
}
