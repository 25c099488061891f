#pragma once
// One corpus row read against its file's header: private to corpus.cpp and its reader
// (parallax::detail).
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallax/core/json_reader.hpp"
#include "parallax/validation/corpus.hpp"

namespace parallax::detail {

// A convention's machine-readable formula: FLOPs per iteration by name, and for MFU/HFU the peak
// the source divided by.
struct ConventionFormula {
  std::string flops;
  double peak_flops_per_gpu = 0;
};

struct CorpusFile {
  std::string path;
  std::string source;
  std::string group;
  std::string stack;
  std::set<std::string> conventions;
  std::map<std::string, ConventionFormula> formulas;
};

struct RowOutcome {
  bool supported = false;
  PublishedRun run;
  UnsupportedRun unsupported;
};

bool unpublished(const nlohmann::json& v);  // a string starting "unpublished"
// A positive integer, or nullopt for "unpublished..." (and 1 for "n/a" where allowed).
std::optional<int64_t> int_or_unpublished(JsonObjectReader& r, const std::string& key,
                                          bool allow_na = false);
void add_reason(std::vector<std::string>& reasons, const std::string& reason);  // once each

// The parts of a row after its model and hardware (corpus_plan.cpp): the job (dtype, global
// batch, stack), the plan with its unpublished fields marked free, and the measurement converted
// to an iteration time through the file's formulas.
void read_row_job(JsonObjectReader& r, PublishedRun& run, std::vector<std::string>& reasons);
void read_row_plan(JsonObjectReader& p, PublishedRun& run, std::vector<std::string>& reasons);
void read_row_measured(JsonObjectReader& r, const CorpusFile& f, PublishedRun& run,
                       std::vector<std::string>& reasons);

// Throws InputError for a row that breaks the schema; returns unsupported (with the reason) for a
// row the cost model cannot express.
RowOutcome read_corpus_row(const nlohmann::json& row, const CorpusFile& f, size_t index);

}  // namespace parallax::detail
