#pragma once
// Shared by the core tests: valid base documents to break one field at a time, and a check that
// an input error names the expected JSON path and rule.
#include <catch2/catch.hpp>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

#include "parallax/core/error.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/core/spec_json.hpp"

namespace parallax::test {

using nlohmann::json;

// Requires f to throw InputError at `path` whose one-line message contains every word.
inline void require_input_error(const std::function<void()>& f, const std::string& path,
                                std::initializer_list<std::string> words) {
  try {
    f();
  } catch (const InputError& e) {
    const std::string what = e.what();
    INFO("message: " << what);
    CHECK(e.path() == path);
    CHECK(what.find('\n') == std::string::npos);
    CHECK(what.rfind(e.source() + ": " + e.path() + ": ", 0) == 0);
    for (const std::string& w : words) CHECK_THAT(what, Catch::Contains(w));
    return;
  }
  FAIL("no InputError thrown (expected one at " << path << ")");
}

// Reads j with one of the spec readers, as a file named `source` would be read.
template <class Read>
auto read_as(const json& j, Read read, const std::string& source = "test.json") {
  JsonObjectReader r(j, source);
  return read(r);
}

inline json base_model() {
  return {{"name", "gpt3-175b"}, {"layers", 96},    {"hidden", 12288},
          {"heads", 96},         {"seq_len", 2048}, {"vocab", 50257}};
}

inline json base_gpu() {
  return {{"name", "a100-80gb"},
          {"source", "datasheet"},
          {"peak_flops_per_s",
           {{"fp32", 19.5e12}, {"tf32", 156e12}, {"bf16", 312e12}, {"fp16", 312e12}}},
          {"hbm_bytes", 85899345920.0},
          {"hbm_bandwidth_bytes_per_s", 2.039e12}};
}

inline json base_cluster() {
  return {{"name", "test-superpod"},
          {"source", "test"},
          {"gpu", base_gpu()},
          {"nodes", 140},
          {"gpus_per_node", 8},
          {"intra_node",
           {{"kind", "nvswitch"},
            {"nvlink_bandwidth_bytes_per_s", 300e9},
            {"allreduce_busbw_bytes_per_s", 230e9},
            {"p2p_bandwidth_bytes_per_s", 150e9},
            {"latency_s", 5e-6}}},
          {"inter_node",
           {{"kind", "infiniband-hdr"},
            {"nics_per_node", 8},
            {"nic_bandwidth_bytes_per_s", 25e9},
            {"nic_effective_bandwidth_bytes_per_s", 23e9},
            {"rail_optimized", true},
            {"tiers", 3},
            {"switch_radix", 40},
            {"oversubscription", 1.0},
            {"latency_s", 1e-5}}},
          {"profile", "megatron-a100"}};
}

inline json base_job() { return {{"global_batch", 1536}}; }

// 8 * 8 * 16 = 1024 GPUs, 1536 / (1 * 16) = 96 micro-batches.
inline json base_plan() { return {{"tp", 8}, {"pp", 8}, {"dp", 16}, {"micro_batch", 1}}; }

}  // namespace parallax::test
