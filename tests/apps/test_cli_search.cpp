// `parallax plan --search FILE` and `--csv`: the search as a file, every candidate as a row.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"

namespace {

using Result = parallax::test::CliResult;
Result run(const std::string& args) { return parallax::test::run_cli(args); }

std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("parallax_search_" + std::to_string(getpid()) + "_" + name))
                               .string();
  std::ofstream(path) << text;
  return path;
}

std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream l(line);
    while (std::getline(l, cell, ',')) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    rows.push_back(cells);
  }
  return rows;
}

const char* kSearch = R"(# Llama 2 70B on 512 H100s: which of these layouts?
model: llama2-70b
cluster: dgx-h100-superpod
gpus: 512
global_batch: 1024
stack: megatron-core
tp: [4, 8]
pp: [2, 4, 8]
mbs: 1
recompute: [selective, full]
zero: [1]
sp: true
cp: 1
)";

// `plan --search FILE --csv -`: the candidates' rows (the header first) and the columns by name.
struct SearchCsv {
  std::vector<std::vector<std::string>> rows;
  std::map<std::string, size_t> col;
};
SearchCsv search_csv(const std::string& file) {
  const Result r = run("plan --search " + file + " --csv - --simulate-top 0");
  REQUIRE(r.code == 0);
  SearchCsv c;
  c.rows = csv_rows(r.out);
  REQUIRE(c.rows.size() > 1);
  for (size_t i = 0; i < c.rows[0].size(); ++i) c.col[c.rows[0][i]] = i;
  return c;
}

}  // namespace

TEST_CASE("plan --search searches only the file's values, and --csv lists every candidate once") {
  const std::string file = temp_file("s.yaml", kSearch);
  const Result r = run("plan --search " + file + " --csv - --simulate-top 0");
  REQUIRE(r.code == 0);
  const auto rows = csv_rows(r.out);
  REQUIRE(rows.size() > 1);
  const std::vector<std::string>& head = rows[0];
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < head.size(); ++i) col[head[i]] = i;
  REQUIRE(col.count("status") == 1);
  std::set<std::string> statuses;
  int64_t ranked = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& row = rows[i];
    REQUIRE(row.size() == head.size());
    statuses.insert(row[col["status"]]);
    // Only the file's values: tp 4 or 8, pp 2, 4 or 8, zero 1, sp on, selective or full.
    CHECK((row[col["tp"]] == "4" || row[col["tp"]] == "8"));
    CHECK((row[col["pp"]] == "2" || row[col["pp"]] == "4" || row[col["pp"]] == "8"));
    CHECK(row[col["zero"]] == "1");
    CHECK(row[col["sp"]] == "on");
    CHECK(row[col["recompute"]] != "none");
    if (row[col["status"]] == "ranked") {
      ++ranked;
      CHECK(row[col["rank"]] == std::to_string(ranked));  // best first
      CHECK(row[col["reason"]].empty());
    } else {
      CHECK_FALSE(row[col["reason"]].empty());
    }
  }
  CHECK(statuses.count("ranked") == 1);
  // The table's count of plans that fit is the CSV's ranked rows.
  const Result t = run("plan --search " + file + " --simulate-top 0");
  REQUIRE(t.code == 0);
  CHECK(t.out.find("top plans of " + std::to_string(ranked) + " that fit") != std::string::npos);
  // The considered count is the CSV's rows.
  CHECK(t.out.find(std::to_string(rows.size() - 1) + " considered") != std::string::npos);
}

TEST_CASE("a search file's ranges and vpp lists limit the search to them") {
  // tp from 2 to 8 (the planner keeps those dividing the heads and within a node: 2, 4, 8) and
  // pp 1 to 4; vpp 1 (no interleaving) and 2.
  const std::string file = temp_file("range.yaml", R"(model: llama2-70b
cluster: dgx-h100-superpod
gpus: 512
global_batch: 1024
stack: megatron-core
tp: {min: 2, max: 8}
pp: {min: 1, max: 4}
vpp: [1, 2]
mbs: 1
recompute: selective
zero: 1
)");
  auto [rows, col] = search_csv(file);
  std::set<std::string> tps, vpps;
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& row = rows[i];
    tps.insert(row[col["tp"]]);
    CHECK((row[col["pp"]] == "1" || row[col["pp"]] == "2" || row[col["pp"]] == "4"));
    if (!row[col["mbs"]].empty()) vpps.insert(row[col["vpp"]]);  // past the (tp, pp) rules
  }
  CHECK(tps == std::set<std::string>{"2", "4", "8"});
  CHECK(vpps == std::set<std::string>{"1", "2"});
}

TEST_CASE("a search file's cp and seq_len: only those cp values, each cutting the sequence") {
  // Llama 2 70B at 32K tokens: the file allows cp 2 and 4 only.
  const std::string file = temp_file("cp_search.yaml", R"(model: llama2-70b
cluster: dgx-h100-superpod
gpus: 512
global_batch: 256
seq_len: 32768
stack: megatron-core
tp: 8
cp: [2, 4]
)");
  auto [rows, col] = search_csv(file);
  REQUIRE(col.count("cp") == 1);
  std::set<std::string> cps, ranked_cps;
  for (size_t i = 1; i < rows.size(); ++i) {
    cps.insert(rows[i][col["cp"]]);
    if (rows[i][col["status"]] == "ranked") ranked_cps.insert(rows[i][col["cp"]]);
  }
  CHECK(cps == std::set<std::string>{"2", "4"});
  CHECK(!ranked_cps.empty());
}

TEST_CASE("a search file's bad values name the file and key, with exit 2") {
  const Result ep = run("plan --search " + temp_file("ep.yaml", std::string(kSearch) + "ep: [1, 0]\n"));
  CHECK(ep.code == 2);
  CHECK(ep.err.find("$.ep[1]: must be an integer in [1, ") != std::string::npos);
  const Result z = run("plan --search " + temp_file("z.yaml", "model: llama2-70b\nzero: [1, 4]\n"));
  CHECK(z.code == 2);
  CHECK(z.err.find("$.zero[1]: must be an integer in [0, 3]") != std::string::npos);
  const Result k = run("plan --search " + temp_file("k.yaml", "model: llama2-70b\nvpp_size: 2\n"));
  CHECK(k.code == 2);
  CHECK(k.err.find("$.vpp_size: unknown key") != std::string::npos);
  const Result r1 = run("plan --search " + temp_file("r1.yaml", "model: llama2-70b\ntp: {min: 8, max: 2}\n"));
  CHECK(r1.code == 2);
  CHECK(r1.err.find("$.tp: min (8) must be <= max (2)") != std::string::npos);
  const Result r2 = run("plan --search " + temp_file("r2.yaml", "model: llama2-70b\npp: {min: 2}\n"));
  CHECK(r2.code == 2);
  CHECK(r2.err.find("$.pp: a range needs both min and max") != std::string::npos);
  const Result r3 = run("plan --search " + temp_file("r3.yaml", "model: llama2-70b\nmbs: {min: 1, step: 2}\n"));
  CHECK(r3.code == 2);
  CHECK(r3.err.find("$.mbs.step: unknown key: a range has min and max") != std::string::npos);
  const Result w = run("plan --search " + temp_file("w.yaml", kSearch) + " --csv /nonexistent-dir/c.csv");
  CHECK(w.code == 2);
  CHECK(w.err.find("/nonexistent-dir/c.csv: --csv: cannot write") != std::string::npos);
  const Result d = run("plan --search " + temp_file("d.yaml", "model: llama2-70b\ntp: [8, 8]\n"));
  CHECK(d.code == 2);
  CHECK(d.err.find("$.tp[1]: repeats an earlier value") != std::string::npos);
}
