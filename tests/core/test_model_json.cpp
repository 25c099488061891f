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
  CHECK(m.rope_base == 10000);
  CHECK_FALSE(m.has_rope_scaling());
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

// Llama 3.1 405B's as its Hugging Face config.json gives them (rope_theta, rope_scaling).
json llama31_rope() {
  json j = base_model();
  j["position"] = "rope";
  j["rope_base"] = 500000;
  j["rope_scaling"] = {{"factor", 8},
                       {"low_freq_factor", 1},
                       {"high_freq_factor", 4},
                       {"original_max_position", 8192}};
  return j;
}

TEST_CASE("model: rope_base and rope_scaling", "[core][model]") {
  json j = base_model();
  j["position"] = "rope";
  ModelSpec m = read_as(j, read_model);
  CHECK(m.rope_base == 10000);  // RoFormer's and Llama 2's when the file does not say
  CHECK_FALSE(m.has_rope_scaling());
  m = read_as(llama31_rope(), read_model);
  CHECK(m.rope_base == 500000);
  REQUIRE(m.has_rope_scaling());
  CHECK(m.rope_scaling.factor == 8);
  CHECK(m.rope_scaling.low_freq_factor == 1);
  CHECK(m.rope_scaling.high_freq_factor == 4);
  CHECK(m.rope_scaling.original_max_position == 8192);
}

TEST_CASE("model: RoPE fields only with rotary positions", "[core][model]") {
  json j = base_model();  // learned positions
  j["rope_base"] = 500000;
  require_input_error([&] { read_as(j, read_model); }, "$.rope_base",
                      {"needs position \"rope\" (position is \"learned\")"});
  j = llama31_rope();
  j["position"] = "alibi";
  j.erase("rope_base");
  require_input_error([&] { read_as(j, read_model); }, "$.rope_scaling",
                      {"needs position \"rope\" (position is \"alibi\")"});
}

TEST_CASE("model: bad RoPE values name the field and the rule", "[core][model]") {
  json j = llama31_rope();
  j["rope_base"] = 0;
  require_input_error([&] { read_as(j, read_model); }, "$.rope_base", {"must be > 0 (got 0)"});
  j["rope_base"] = -1;
  require_input_error([&] { read_as(j, read_model); }, "$.rope_base", {"must be >= 0 (got -1)"});
  j["rope_base"] = 1e13;
  require_input_error([&] { read_as(j, read_model); }, "$.rope_base",
                      {"must be <= 1000000000000 (got 10000000000000)"});
  j["rope_base"] = "500000";
  require_input_error([&] { read_as(j, read_model); }, "$.rope_base",
                      {"must be a number (got string)"});

  j = llama31_rope();
  j["rope_scaling"]["factor"] = 0.5;  // a factor below 1 would shrink the context
  require_input_error([&] { read_as(j, read_model); }, "$.rope_scaling.factor",
                      {"must be >= 1 (got 0.5)"});
  j = llama31_rope();
  j["rope_scaling"]["low_freq_factor"] = 0;
  require_input_error([&] { read_as(j, read_model); }, "$.rope_scaling.low_freq_factor",
                      {"must be > 0 (got 0)"});
  j = llama31_rope();
  j["rope_scaling"]["high_freq_factor"] = 1;
  require_input_error([&] { read_as(j, read_model); }, "$.rope_scaling.high_freq_factor",
                      {"must be > low_freq_factor (1) (got 1)"});
  j = llama31_rope();
  j["rope_scaling"]["original_max_position"] = 8192.5;
  require_input_error([&] { read_as(j, read_model); }, "$.rope_scaling.original_max_position",
                      {"must be an integer"});
  j = llama31_rope();
  j["rope_scaling"].erase("original_max_position");
  require_input_error([&] { read_as(j, read_model); }, "$.rope_scaling.original_max_position",
                      {"is required"});
  // Hugging Face's key for it is original_max_position_embeddings: the error says ours.
  j["rope_scaling"]["original_max_position_embeddings"] = 8192;
  require_input_error([&] { read_as(j, read_model); },
                      "$.rope_scaling.original_max_position_embeddings",
                      {"is spelled \"original_max_position\" here"});
  j["rope_scaling"].erase("original_max_position_embeddings");
  j["rope_scaling"]["rope_type"] = "llama3";
  require_input_error([&] { read_as(j, read_model); }, "$.rope_scaling.rope_type",
                      {"unknown key \"rope_type\""});
  j = llama31_rope();
  j["rope_scaling"] = 8;
  require_input_error([&] { read_as(j, read_model); }, "$.rope_scaling", {"must be an object"});
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
  // Only a rotary model writes RoPE fields, which the reader would refuse on any other.
  CHECK_FALSE(j.contains("rope_base"));
  CHECK_FALSE(j.contains("rope_scaling"));
}

TEST_CASE("model: RoPE fields round trip", "[core][model][roundtrip]") {
  ModelSpec m = read_as(llama31_rope(), read_model);
  m.rope_base = 123456.5;
  m.rope_scaling = {32, 1.5, 4.25, 4096};
  const json j = to_json(m);
  const ModelSpec back = read_as(parse_json_text(j.dump(2), "m.json"), read_model);
  CHECK(to_json(back) == j);
  CHECK(back.rope_base == m.rope_base);
  CHECK(back.rope_scaling == m.rope_scaling);
  // Without scaling the object is left out, and the base is written even at its default.
  m.rope_scaling = RopeScaling{};
  m.rope_base = 10000;
  const json plain = to_json(m);
  CHECK_FALSE(plain.contains("rope_scaling"));
  CHECK(plain.at("rope_base") == 10000);
  CHECK_FALSE(read_as(plain, read_model).has_rope_scaling());
}

}  // namespace parallax::test
