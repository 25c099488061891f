#include "core_test_util.hpp"

namespace parallax::test {

TEST_CASE("gpu: reads peaks per dtype, absent means no such math", "[core][gpu]") {
  const GpuSpec g = read_as(base_gpu(), read_gpu);
  CHECK(g.name == "a100-80gb");
  CHECK(g.peak(Dtype::bf16) == 312e12);
  CHECK(g.peak(Dtype::tf32) == 156e12);
  CHECK(g.peak(Dtype::fp8) == 0);
  CHECK(g.hbm_bytes == 85899345920.0);
}

TEST_CASE("gpu: bf16 or fp16 is required", "[core][gpu]") {
  json j = base_gpu();
  j["peak_flops_per_s"] = {{"fp32", 19.5e12}};
  require_input_error([&] { read_as(j, read_gpu, "gpu.json"); }, "$.peak_flops_per_s",
                      {"gpu.json", "bf16 or fp16"});
  j["peak_flops_per_s"] = {{"fp16", 125e12}};  // V100: fp16 only
  CHECK(read_as(j, read_gpu).peak(Dtype::bf16) == 0);
}

TEST_CASE("gpu: peak entries", "[core][gpu]") {
  json j = base_gpu();
  j["peak_flops_per_s"]["int8"] = 624e12;
  require_input_error([&] { read_as(j, read_gpu); }, "$.peak_flops_per_s.int8",
                      {"unknown key \"int8\""});
  j = base_gpu();
  j["peak_flops_per_s"]["fp8"] = 0;
  require_input_error([&] { read_as(j, read_gpu); }, "$.peak_flops_per_s.fp8",
                      {"must be > 0 (got 0)"});
  j["peak_flops_per_s"] = json::array();
  require_input_error([&] { read_as(j, read_gpu); }, "$.peak_flops_per_s",
                      {"must be an object (got array)"});
  j = base_gpu();
  j.erase("peak_flops_per_s");
  require_input_error([&] { read_as(j, read_gpu); }, "$.peak_flops_per_s", {"is required"});
}

TEST_CASE("gpu: memory", "[core][gpu]") {
  json j = base_gpu();
  j["hbm_bytes"] = 2e15;
  require_input_error([&] { read_as(j, read_gpu); }, "$.hbm_bytes",
                      {"must be <= 1e+15 (got 2e+15)"});
  j = base_gpu();
  j.erase("hbm_bandwidth_bytes_per_s");
  require_input_error([&] { read_as(j, read_gpu); }, "$.hbm_bandwidth_bytes_per_s",
                      {"is required"});

  j = base_gpu();
  j["arch"] = "hopper";
  require_input_error([&] { read_as(j, read_gpu); }, "$.arch", {"compute capability", "hopper"});
}

TEST_CASE("gpu: compute capability major from arch: all digits but the last", "[core][gpu]") {
  auto major = [](const char* arch) {
    GpuSpec g;
    g.arch = arch;
    return compute_capability_major(g);
  };
  CHECK(major("sm80") == 8);    // A100: 8.0
  CHECK(major("sm86") == 8);    // A10, RTX 3090: 8.6
  CHECK(major("sm90") == 9);    // H100, H200: 9.0
  CHECK(major("sm100") == 10);  // B200: 10.0, Blackwell
  CHECK(major("sm120") == 12);  // RTX 50xx: 12.0
  CHECK(major("sm7") == 0);     // one digit: the minor only
  CHECK_FALSE(major(""));       // CPU device: no arch
  CHECK_FALSE(major("sm"));
  CHECK_FALSE(major("hopper"));
  CHECK_FALSE(major("sm9a"));
}

TEST_CASE("gpu: a GEMM tile needs the SM count and sides of 8 to 1024", "[core][gpu][errors]") {
  json j = base_gpu();
  j.erase("sm_count");
  j["gemm_tile"] = {{"m", 256}, {"n", 128}};
  require_input_error([&] { read_as(j, read_gpu); }, "$.gemm_tile", {"sm_count"});
  j["sm_count"] = 108;
  j["gemm_tile"]["n"] = 4;
  require_input_error([&] { read_as(j, read_gpu); }, "$.gemm_tile.n", {});
  j["gemm_tile"]["n"] = 128;
  j["gemm_tile"]["k"] = 32;
  require_input_error([&] { read_as(j, read_gpu); }, "$.gemm_tile.k", {"unknown"});
}

TEST_CASE("gpu: write then read round trips", "[core][gpu][roundtrip]") {
  GpuSpec g{.name = "h100-ish",
            .source = "s",
            .peak_flops_per_s = {66.9e12, 494.7e12, 989.4e12, 989.4e12, 1978.9e12},
            .hbm_bytes = 80.0 * (1ull << 30),
            .hbm_bandwidth_bytes_per_s = 3.35e12 + 0.1,
            .sm_count = 132,
            .arch = "sm90",
            .gemm_tile_m = 128,
            .gemm_tile_n = 256,
            .gemm_tile_source = "t"};
  const json j = to_json(g);
  const GpuSpec back = read_as(parse_json_text(j.dump(), "g.json"), read_gpu);
  CHECK(back.name == g.name);
  CHECK(back.source == g.source);
  CHECK(back.peak_flops_per_s == g.peak_flops_per_s);
  CHECK(back.hbm_bytes == g.hbm_bytes);
  CHECK(back.hbm_bandwidth_bytes_per_s == g.hbm_bandwidth_bytes_per_s);
  CHECK(back.sm_count == 132);
  CHECK(back.arch == "sm90");
  CHECK(back.gemm_tile_m == 128);
  CHECK(back.gemm_tile_n == 256);
  CHECK(back.gemm_tile_source == "t");
  CHECK(to_json(back) == j);

  g.peak_flops_per_s[static_cast<int>(Dtype::fp8)] = 0;  // no fp8: left out, read back as 0
  CHECK_FALSE(to_json(g)["peak_flops_per_s"].contains("fp8"));
  CHECK(read_as(to_json(g), read_gpu).peak(Dtype::fp8) == 0);
}

}  // namespace parallax::test
