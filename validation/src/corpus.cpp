#include "parallax/validation/corpus.hpp"

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include "corpus_row.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/json_reader.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/core/spec_json.hpp"
#include "parallax/costmodel/conventions.hpp"

namespace parallax {
namespace {

using detail::ConventionFormula;
using detail::CorpusFile;
using detail::RowOutcome;

namespace fs = std::filesystem;

const std::initializer_list<const char*> kStacks = {
    "megatron-lm", "megatron-core", "nemo", "nemo-1", "deepspeed", "megatron-deepspeed",
    "pytorch-fsdp", "torchtitan",   "llm-foundry", "other"};

// The corpus files named by paths: a directory contributes its *.json in name order.
std::vector<std::string> corpus_files(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> here;
      for (const auto& e : fs::directory_iterator(p)) {
        if (e.path().extension() == ".json") here.push_back(e.path().string());
      }
      std::sort(here.begin(), here.end());
      if (here.empty()) throw InputError(p, "--runs", "directory holds no *.json corpus file");
      out.insert(out.end(), here.begin(), here.end());
    } else {
      out.push_back(p);  // read_json_file reports a missing file
    }
  }
  return out;
}

CorpusFile read_file_header(JsonObjectReader& r, const std::string& path) {
  CorpusFile f;
  f.path = path;
  r.get_int("corpus_version", 2, 2);
  {
    JsonObjectReader s = r.object("source");
    f.source = s.get_string("id");
    if (fs::path(path).filename().string() != f.source + ".json") {
      s.fail("id", "must name the file (" + fs::path(path).filename().string() + ")");
    }
    f.group = s.get_string_or("group", f.source);
    for (const char* k : {"title", "kind", "where", "version", "url", "independent_of"}) s.ignore(k);
    s.finish();
  }
  {
    JsonObjectReader st = r.object("stack");
    f.stack = st.get_enum("name", kStacks);
    st.ignore("version");
    st.finish();
  }
  const nlohmann::json& conv = r.raw("conventions");
  if (!conv.is_object() || conv.empty()) r.fail("conventions", "must define the source's metrics");
  for (const auto& [k, v] : conv.items()) f.conventions.insert(k);
  if (r.has("formulas")) {
    const nlohmann::json& forms = r.raw("formulas");
    if (!forms.is_object()) r.fail("formulas", "must be an object keyed by convention");
    for (const auto& [k, v] : forms.items()) {
      JsonObjectReader fr(v, path, "$.formulas." + k);
      if (!f.conventions.count(k)) fr.fail("flops_per_iteration", "names no convention of the file");
      ConventionFormula cf;
      cf.flops = fr.get_enum("flops_per_iteration", {"megatron_hw", "6n_attn", "6n_attn_noembed"});
      cf.peak_flops_per_gpu = fr.get_number_or("peak_flops_per_gpu", 1, 1e18, 0);
      fr.finish();
      f.formulas[k] = cf;
    }
  }
  return f;
}

}  // namespace

double formula_flops_per_iteration(const std::string& formula, const ModelSpec& m,
                                   int64_t global_batch, const std::string& source) {
  const double B = static_cast<double>(global_batch), s = static_cast<double>(m.seq_len);
  const double L = static_cast<double>(m.layers), h = static_cast<double>(m.hidden);
  if (formula == "megatron_hw") return megatron_flops_closed_form(m, global_batch);
  if (formula == "6n_attn" || formula == "6n_attn_noembed") {
    double n = model_params(m);
    if (formula == "6n_attn_noembed") n -= static_cast<double>(m.vocab) * h;
    return B * s * (6 * n + 12 * L * h * s);
  }
  throw InputError(source, "$.formulas", "unknown FLOP formula \"" + formula + "\"");
}

Corpus read_corpus(const std::vector<std::string>& paths) {
  Corpus out;
  std::set<std::string> ids, sources;
  for (const std::string& path : corpus_files(paths)) {
    const nlohmann::json doc = read_json_file(path);
    JsonObjectReader r(doc, path);
    const CorpusFile f = read_file_header(r, path);
    if (!sources.insert(f.source).second) {
      r.fail("source", "source id \"" + f.source + "\" is read twice");
    }
    const nlohmann::json& rows = r.raw("runs");
    if (!rows.is_array() || rows.empty()) r.fail("runs", "must be a non-empty array of runs");
    r.finish();
    out.files.push_back(path);
    out.group_of_source[f.source] = f.group;
    for (size_t i = 0; i < rows.size(); ++i) {
      RowOutcome row = detail::read_corpus_row(rows[i], f, i);
      const std::string& id = row.supported ? row.run.id : row.unsupported.id;
      if (!ids.insert(id).second) {
        throw InputError(path, "$.runs[" + std::to_string(i) + "].id",
                         "\"" + id + "\" is also another row's id");
      }
      if (row.supported) {
        out.runs.push_back(std::move(row.run));
      } else {
        out.unsupported.push_back(std::move(row.unsupported));
      }
    }
  }
  return out;
}

}  // namespace parallax
