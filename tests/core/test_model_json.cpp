#include "core_test_util.hpp"

namespace parallax::test {

TEST_CASE("model: defaults of the optional fields", "[core][model]") {
  json j = base_model();
  j.erase("name");
  const ModelSpec m = read_as(j, read_model);
  CHECK(m.name == "custom");
  CHECK(m.source.empty());
  CHECK(m.kv_heads == 96);
  CHECK(m.ffn_hidden == 4 * 12288);
  CHECK(m.activation == Activation::gelu);
  CHECK(m.position == Position::learned);
  CHECK(m.tied_embeddings);
  CHECK(m.norm == Norm::layernorm);
  CHECK(m.head_dim() == 128);
}

TEST_CASE("model: all fields given", "[core][model]") {
  const json j = {{"name", "llama"},        {"source", "paper"},  {"layers", 80},
                  {"hidden", 8192},         {"heads", 64},        {"kv_heads", 8},
                  {"ffn_hidden", 28672},    {"seq_len", 4096},    {"vocab", 32000},
                  {"activation", "swiglu"}, {"position", "rope"}, {"tied_embeddings", false},
                  {"norm", "rmsnorm"}};
  const ModelSpec m = read_as(j, read_model);
  CHECK(m.kv_heads == 8);
  CHECK(m.ffn_hidden == 28672);
  CHECK(m.activation == Activation::swiglu);
  CHECK(m.position == Position::rope);
  CHECK_FALSE(m.tied_embeddings);
  CHECK(m.norm == Norm::rmsnorm);
}

TEST_CASE("model: kv_heads must divide heads", "[core][model]") {
  json j = base_model();
  j["kv_heads"] = 7;
  require_input_error([&] { read_as(j, read_model); }, "$.kv_heads",
                      {"must divide heads (96) (got 7)"});
  j["kv_heads"] = 192;
  require_input_error([&] { read_as(j, read_model); }, "$.kv_heads", {"must divide heads (96)"});
}

TEST_CASE("model: hidden must be divisible by heads", "[core][model]") {
  json j = base_model();
  j["heads"] = 100;
  require_input_error([&] { read_as(j, read_model); }, "$.heads",
                      {"hidden (12288) must be divisible by heads (100)"});
}

TEST_CASE("model: limits", "[core][model]") {
  json j = base_model();
  j["layers"] = Limits::max_layers + 1;
  require_input_error([&] { read_as(j, read_model); }, "$.layers", {"<= 100000"});
  j = base_model();
  j["vocab"] = 1e9;
  require_input_error([&] { read_as(j, read_model); }, "$.vocab", {"<= 16777216"});
}

TEST_CASE("model: write then read round trips", "[core][model][roundtrip]") {
  ModelSpec m;
  m.name = "odd";
  m.source = "made up \"quoted\"";
  m.layers = 3;
  m.hidden = 96;
  m.heads = 12;
  m.kv_heads = 4;
  m.ffn_hidden = 250;
  m.seq_len = 77;
  m.vocab = 1001;
  m.activation = Activation::swiglu;
  m.position = Position::alibi;
  m.tied_embeddings = false;
  m.norm = Norm::rmsnorm;
  const json j = to_json(m);
  const ModelSpec back = read_as(j, read_model);
  CHECK(to_json(back) == j);
  CHECK(back.name == m.name);
  CHECK(back.source == m.source);
  CHECK(back.layers == m.layers);
  CHECK(back.hidden == m.hidden);
  CHECK(back.heads == m.heads);
  CHECK(back.kv_heads == m.kv_heads);
  CHECK(back.ffn_hidden == m.ffn_hidden);
  CHECK(back.seq_len == m.seq_len);
  CHECK(back.vocab == m.vocab);
  CHECK(back.activation == m.activation);
  CHECK(back.position == m.position);
  CHECK(back.tied_embeddings == m.tied_embeddings);
  CHECK(back.norm == m.norm);
  // Through text too, as a file would go.
  const json reparsed = parse_json_text(j.dump(2), "m.json");
  CHECK(to_json(read_as(reparsed, read_model)) == j);
}

}  // namespace parallax::test
