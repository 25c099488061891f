// The error classes every reader shares: each names the file, the JSON path and the rule.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "core_test_util.hpp"

namespace parallax::test {
namespace {

ModelSpec model_from_text(const std::string& text) {
  const json j = parse_json_text(text, "model.json");
  return read_as(j, read_model, "model.json");
}

}  // namespace

TEST_CASE("malformed JSON names the byte position", "[core][json]") {
  require_input_error([] { model_from_text("{\"layers\": 96,, }"); }, "$",
                      {"model.json", "malformed JSON", "byte 15"});
  require_input_error([] { model_from_text("{\"layers\": 96} trailing"); }, "$",
                      {"malformed JSON", "byte"});
  require_input_error([] { model_from_text(""); }, "$", {"malformed JSON", "byte 1"});
}

TEST_CASE("root and nested values must be objects", "[core][json]") {
  require_input_error([] { model_from_text("[1, 2]"); }, "$", {"must be an object (got array)"});
  json c = base_cluster();
  c["intra_node"] = "nvswitch";
  require_input_error([&] { read_as(c, read_cluster, "cluster.json"); }, "$.intra_node",
                      {"cluster.json", "must be an object (got string)"});
}

TEST_CASE("unknown keys are rejected with a suggestion", "[core][json]") {
  json m = base_model();
  m.erase("layers");
  m["layrs"] = 96;
  require_input_error([&] { read_as(m, read_model, "model.json"); }, "$.layrs",
                      {"model.json: $.layrs: unknown key \"layrs\"", "did you mean \"layers\""});
}

TEST_CASE("finish reports the first unknown key in key order", "[core][json]") {
  const json j = {{"b_extra", 1}, {"a_extra", 2}, {"known", 3}};
  JsonObjectReader r(j, "x.json");
  CHECK(r.get_int("known", 0, 10) == 3);
  require_input_error([&] { r.finish(); }, "$.a_extra", {"unknown key \"a_extra\""});
  r.ignore("a_extra");
  r.ignore("b_extra");
  CHECK_NOTHROW(r.finish());
}

TEST_CASE("wrong types name the expected and the actual type", "[core][json]") {
  json m = base_model();
  m["layers"] = "96";
  require_input_error([&] { read_as(m, read_model); }, "$.layers",
                      {"must be an integer (got string)"});
  json g = base_gpu();
  g["hbm_bytes"] = "80GB";
  require_input_error([&] { read_as(g, read_gpu); }, "$.hbm_bytes",
                      {"must be a number (got string)"});
  m = base_model();
  m["tied_embeddings"] = 1;
  require_input_error([&] { read_as(m, read_model); }, "$.tied_embeddings",
                      {"must be a boolean (got number)"});
  m = base_model();
  m["name"] = 7;
  require_input_error([&] { read_as(m, read_model); }, "$.name", {"must be a string (got number)"});
}

TEST_CASE("missing required fields", "[core][json]") {
  json m = base_model();
  m.erase("vocab");
  require_input_error([&] { read_as(m, read_model); }, "$.vocab", {"is required"});
  json c = base_cluster();
  c["inter_node"].erase("tiers");
  require_input_error([&] { read_as(c, read_cluster); }, "$.inter_node.tiers", {"is required"});
}

TEST_CASE("null is a type error, not an absent value", "[core][json]") {
  json m = base_model();
  m["kv_heads"] = nullptr;
  require_input_error([&] { read_as(m, read_model); }, "$.kv_heads",
                      {"must be an integer (got null)"});
  json j = base_job();
  j["tokens"] = nullptr;
  require_input_error([&] { read_as(j, read_job); }, "$.tokens", {"must be a number (got null)"});
}

TEST_CASE("numbers must be finite", "[core][json]") {
  // JSON has no infinity, but a literal beyond the double range overflows while parsing.
  const std::string text =
      R"({"name": "x", "peak_flops_per_s": {"bf16": 1e400}, "hbm_bytes": 1, "hbm_bandwidth_bytes_per_s": 1})";
  require_input_error([&] { (void)parse_json_text(text, "gpu.json"); }, "$.peak_flops_per_s.bf16",
                      {"gpu.json", "must be finite", "1e400"});
  require_input_error([] { (void)parse_json_text("[1, 2, -1e999]", "a.json"); }, "$[2]",
                      {"must be finite"});
  require_input_error(
      [] { (void)parse_json_text(R"({"a": [{"b": [1]}, {"b": [2, 1e999]}]})", "a.json"); },
      "$.a[1].b[1]", {"must be finite"});
  // A document built in code can hold infinity directly.
  json g = base_gpu();
  g["hbm_bytes"] = std::numeric_limits<double>::infinity();
  require_input_error([&] { read_as(g, read_gpu); }, "$.hbm_bytes", {"must be finite (got inf)"});
  json m = base_model();
  m["layers"] = std::numeric_limits<double>::quiet_NaN();
  require_input_error([&] { read_as(m, read_model); }, "$.layers", {"must be finite (got nan)"});
}

TEST_CASE("integers must be integral", "[core][json]") {
  json m = base_model();
  m["layers"] = 2.5;
  require_input_error([&] { read_as(m, read_model); }, "$.layers",
                      {"must be an integer (got 2.5)"});
  m["layers"] = 96.0;  // a whole float is an integer
  CHECK(read_as(m, read_model).layers == 96);
}

TEST_CASE("zero and negative values", "[core][json]") {
  json m = base_model();
  m["layers"] = -3;
  require_input_error([&] { read_as(m, read_model, "model.json"); }, "$.layers",
                      {"model.json: $.layers: must be an integer >= 1 (got -3)"});
  m = base_model();
  m["heads"] = 0;
  require_input_error([&] { read_as(m, read_model); }, "$.heads",
                      {"must be an integer >= 1 (got 0)"});
  json g = base_gpu();
  g["hbm_bandwidth_bytes_per_s"] = 0;
  require_input_error([&] { read_as(g, read_gpu); }, "$.hbm_bandwidth_bytes_per_s",
                      {"must be > 0 (got 0)"});
  g["hbm_bandwidth_bytes_per_s"] = -1.5;
  require_input_error([&] { read_as(g, read_gpu); }, "$.hbm_bandwidth_bytes_per_s",
                      {"must be >= 0 (got -1.5)"});
}

TEST_CASE("absurd values above the limits", "[core][json]") {
  json p = base_plan();
  p["dp"] = 1e30;
  require_input_error([&] { read_as(p, read_plan); }, "$.dp",
                      {"must be an integer <= 10000000 (got 1e+30)"});
  json c = base_cluster();
  c["nodes"] = 1e30;
  require_input_error([&] { read_as(c, read_cluster); }, "$.nodes", {"<= 10000000", "1e+30"});
  c = base_cluster();
  c["nodes"] = 18446744073709551615ULL;  // beyond int64
  require_input_error([&] { read_as(c, read_cluster); }, "$.nodes",
                      {"<= 10000000", "18446744073709551615"});
  json g = base_gpu();
  g["peak_flops_per_s"]["bf16"] = 1e30;
  require_input_error([&] { read_as(g, read_gpu); }, "$.peak_flops_per_s.bf16",
                      {"must be <= 1e+18 (got 1e+30)"});
}

TEST_CASE("enum spellings list the allowed ones", "[core][json]") {
  json m = base_model();
  m["activation"] = "relu";
  require_input_error([&] { read_as(m, read_model); }, "$.activation",
                      {"must be one of \"gelu\", \"swiglu\" (got \"relu\")"});
  json p = base_plan();
  p["schedule"] = "1F1B";
  require_input_error([&] { read_as(p, read_plan); }, "$.schedule",
                      {"\"gpipe\", \"1f1b\", \"interleaved\"", "1F1B"});
  p = base_plan();
  p["recompute"] = true;
  require_input_error([&] { read_as(p, read_plan); }, "$.recompute",
                      {"\"none\", \"selective\", \"full\"", "got boolean"});
}

TEST_CASE("duplicate keys are rejected", "[core][json]") {
  require_input_error([] { (void)parse_json_text(R"({"plan": {"tp": 2, "tp": 4}})", "plan.json"); },
                      "$.plan.tp", {"duplicate key \"tp\""});
  CHECK_NOTHROW(parse_json_text(R"([{"tp": 2}, {"tp": 4}])", "plan.json"));
}

TEST_CASE("messages stay on one line", "[core][json]") {
  json m = base_model();
  m["bad\nkey"] = 1;
  require_input_error([&] { read_as(m, read_model); }, "$[\"bad\\nkey\"]", {"unknown key"});
}

TEST_CASE("optional getters use the fallback only when the key is absent", "[core][json]") {
  const json j = {{"a", 5}};
  JsonObjectReader r(j, "x.json");
  CHECK(r.get_int_or("a", 0, 10, 1) == 5);
  CHECK(r.get_int_or("b", 0, 10, 1) == 1);
  CHECK(r.get_string_or("c", "dflt") == "dflt");
  CHECK(r.get_enum_or("d", {"x", "y"}, "y") == "y");
  CHECK_FALSE(r.has("b"));
  CHECK_NOTHROW(r.finish());
}

TEST_CASE("read_json_file errors name the file", "[core][json]") {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("parallax_core_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string missing = (dir / "missing.json").string();
  require_input_error([&] { (void)read_json_file(missing); }, "$",
                      {missing, "cannot read file: No such file or directory"});
  require_input_error([&] { (void)read_json_file(dir.string()); }, "$",
                      {"cannot read file: Is a directory"});
  const std::string empty = (dir / "empty.json").string();
  std::ofstream(empty).close();
  require_input_error([&] { (void)read_json_file(empty); }, "$", {empty, "malformed JSON"});
  const std::string good = (dir / "good.json").string();
  std::ofstream(good) << base_model().dump();
  CHECK(read_json_file(good) == base_model());
  fs::remove_all(dir);
}

TEST_CASE("a stack's fp8 recipe is one of kFp8Scalings, and the refusal lists them all", "[core][json]") {
  json s = {{"attention", "fused"},
            {"fp8", {{"scaling", "delayed"}, {"weight_cast", "per_iteration"}, {"source", "test"}}}};
  std::string list;
  for (Fp8Scaling x : kFp8Scalings) list += (list.empty() ? "\"" : ", \"") + std::string(to_string(x)) + "\"";
  for (Fp8Scaling x : kFp8Scalings) {
    s["fp8"]["scaling"] = to_string(x);
    CHECK(read_as(s, read_stack, "stack.json").fp8.scaling == x);
  }
  s["fp8"]["scaling"] = "tensorwise";
  require_input_error([&] { read_as(s, read_stack, "stack.json"); }, "$.fp8.scaling",
                      {"stack.json", "must be one of " + list + " (got \"tensorwise\")"});
}

TEST_CASE("a plan's moe_dispatcher reads every MoeDispatcher spelling, and the refusal lists them all",
          "[core][json]") {
  json p = base_plan();
  CHECK(read_as(p, read_plan).moe_dispatcher == MoeDispatcher::alltoall);  // Megatron-Core's default
  std::string list;
  for (MoeDispatcher d : kMoeDispatchers) {
    list += (list.empty() ? "\"" : ", \"") + std::string(to_string(d)) + "\"";
    p["moe_dispatcher"] = to_string(d);
    CHECK(read_as(p, read_plan).moe_dispatcher == d);
  }
  p["moe_dispatcher"] = "allgather";
  require_input_error([&] { read_as(p, read_plan); }, "$.moe_dispatcher",
                      {"must be one of " + list + " (got \"allgather\")"});
  // The default schedule follows the virtual stages: interleaved with vpp > 1, else 1F1B.
  p = base_plan();
  CHECK(read_as(p, read_plan).schedule == Schedule::one_f_one_b);
  p["vpp"] = 2;
  CHECK(read_as(p, read_plan).schedule == Schedule::interleaved);
}

}  // namespace parallax::test
