// nccl-tests output read by its header row. The samples in tests/data are synthetic runs written
// with the printf formats of three nccl-tests generations (NVIDIA/nccl-tests src/common.cu and
// src/util.cu): 2.13 (8 x A100, -g 8), 2.17.6 (2 nodes x 8 A100, MPI) and a 2021 all_gather (no
// redop/root columns, "error" instead of "#wrong"). Their numbers follow nccl-tests' definitions,
// which these tests check from the parsed values alone.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <sstream>

#include "calibration_test_util.hpp"
#include "parallax/calibration/closed_loop.hpp"
#include "parallax/calibration/nccl_tests.hpp"
#include "parallax/calibration/nccl_tests_collective.hpp"
#include "parallax/core/presets.hpp"
#include "parallax/costmodel/profile.hpp"

using namespace parallax;
using namespace parallax::calib;
using parallax::test::read_data;

namespace {

// algbw = size / time (GB/s from bytes and us); printed values are rounded, the time to 0.5 of
// its last printed digit (<= 5e-4 relative here) and the bandwidths to 0.005 GB/s.
void check_algbw(double size, double time_us, double algbw) {
  const double expected = size / time_us / 1e3;
  CHECK(std::abs(algbw - expected) <= 0.006 + 1e-3 * expected);
}

// busbw = algbw * factor, both rounded to 0.01.
void check_busbw(double algbw, double busbw, double factor) {
  CHECK(std::abs(busbw - algbw * factor) <= 0.006 + 0.005 * factor);
}

void check_bandwidths(const NcclTestsRun& run, double factor) {
  for (const NcclTestsRow& r : run.rows) {
    INFO("line " << r.line);
    check_algbw(r.size_bytes, r.oop_time_us, r.oop_algbw_gbps);
    check_algbw(r.size_bytes, r.ip_time_us, r.ip_algbw_gbps);
    check_busbw(r.oop_algbw_gbps, r.oop_busbw_gbps, factor);
    check_busbw(r.ip_algbw_gbps, r.ip_busbw_gbps, factor);
  }
}

// "# Avg bus bandwidth" is the mean busbw over every out-of-place and in-place measurement.
void check_avg_busbw(const NcclTestsRun& run) {
  double sum = 0;
  for (const NcclTestsRow& r : run.rows) sum += r.oop_busbw_gbps + r.ip_busbw_gbps;
  CHECK(run.avg_busbw_gbps == Approx(sum / (2.0 * static_cast<double>(run.rows.size()))).margin(0.01));
}

void check_doubling_sizes(const NcclTestsRun& run, double first, double last) {
  REQUIRE_FALSE(run.rows.empty());
  CHECK(run.rows.front().size_bytes == first);
  CHECK(run.rows.back().size_bytes == last);
  for (size_t i = 1; i < run.rows.size(); ++i)
    CHECK(run.rows[i].size_bytes == 2 * run.rows[i - 1].size_bytes);
}

}  // namespace

TEST_CASE("nccl-tests 2.13 all_reduce_perf -g 8 on one DGX A100") {
  const std::string text = read_data("nccl-tests-all-reduce-8xa100.txt");
  const NcclTestsRun run = parse_nccl_tests(text, "8xa100.txt");
  CHECK(run.collective == "all_reduce");  // from the command line: 2.13 prints no test name
  CHECK(run.version.empty());
  CHECK(run.ranks == 8);
  CHECK(run.nodes == 1);
  REQUIRE(run.devices.size() == 8);
  for (const std::string& d : run.devices) CHECK(d == "NVIDIA A100-SXM4-80GB");
  REQUIRE(run.rows.size() == 31);  // 8 B .. 8 GiB, factor 2
  check_doubling_sizes(run, 8, 8589934592.0);
  for (const NcclTestsRow& r : run.rows) {
    CHECK(r.count == static_cast<int64_t>(r.size_bytes) / 4);  // float
    CHECK(r.type == "float");
    CHECK(r.redop == "sum");
    CHECK(r.root == -1);
    CHECK(r.oop_wrong == 0);
    CHECK(r.ip_wrong == 0);
    CHECK(std::isnan(r.oop_error));
  }
  const NcclTestsRow& last = run.rows.back();
  CHECK(last.line == static_cast<int64_t>(test::line_of(text, " 8589934592    2147483648 ")));
  CHECK(last.oop_time_us == 64295);
  CHECK(last.oop_algbw_gbps == 133.60);
  CHECK(last.oop_busbw_gbps == 233.80);
  CHECK(last.ip_time_us == 63436);
  CHECK(run.rows.front().oop_time_us == 10.56);
  CHECK(run.avg_busbw_gbps == 91.3496);
  check_bandwidths(run, 2.0 * 7 / 8);
  check_avg_busbw(run);
}

TEST_CASE("nccl-tests 2.17 all_reduce_perf over MPI on two DGX A100 nodes") {
  const NcclTestsRun run = parse_nccl_tests(read_data("nccl-tests-all-reduce-2x8xa100.txt"), "2x8.txt");
  CHECK(run.collective == "all_reduce");  // "# Collective test starting: all_reduce_perf"
  CHECK(run.version == "2.17.6");
  CHECK(run.ranks == 16);
  CHECK(run.nodes == 2);
  REQUIRE(run.hosts.size() == 16);
  CHECK(run.hosts[7] == "dgx-a100-01");
  CHECK(run.hosts[8] == "dgx-a100-02");
  CHECK(std::set<std::string>(run.devices.begin(), run.devices.end()) ==
        std::set<std::string>{"NVIDIA A100-SXM4-80GB"});
  REQUIRE(run.rows.size() == 15);  // 1 MiB .. 16 GiB
  check_doubling_sizes(run, 1048576, 17179869184.0);
  CHECK(run.rows.back().oop_time_us == 171609);
  CHECK(run.rows.back().oop_busbw_gbps == 187.71);
  CHECK(run.avg_busbw_gbps == 149.149);
  check_bandwidths(run, 2.0 * 15 / 16);
  check_avg_busbw(run);
}

TEST_CASE("nccl-tests 2021 all_gather_perf: no redop or root column, an error column") {
  const NcclTestsRun run = parse_nccl_tests(read_data("nccl-tests-all-gather-2021-8xv100.txt"), "ag.txt");
  CHECK(run.collective == "all_gather");
  CHECK(run.ranks == 8);  // "#   Rank  0 Pid ..." lines, no Group
  CHECK(run.nodes == 1);
  CHECK(run.devices.front() == "Tesla V100-SXM2-32GB");
  REQUIRE(run.rows.size() == 11);  // 1 MiB .. 1 GiB
  check_doubling_sizes(run, 1048576, 1073741824);
  for (const NcclTestsRow& r : run.rows) {
    CHECK(r.count == static_cast<int64_t>(r.size_bytes) / 4 / 8);  // elements per rank
    CHECK(r.redop.empty());
    CHECK(r.root == -1);
    CHECK(r.oop_wrong == -1);
    CHECK(r.oop_error == 0);
    CHECK(r.ip_error == 0);
  }
  CHECK(run.avg_busbw_gbps == 90.765);
  check_bandwidths(run, 7.0 / 8);  // all-gather: busbw = algbw (n-1)/n
  check_avg_busbw(run);
}

TEST_CASE("nccl-tests output behind an mpirun --tag-output prefix reads the same") {
  std::istringstream in(read_data("nccl-tests-all-reduce-8xa100.txt"));
  std::string tagged;
  for (std::string line; std::getline(in, line);) tagged += "[1,0]<stdout>:" + line + "\n";
  const NcclTestsRun plain = parse_nccl_tests(read_data("nccl-tests-all-reduce-8xa100.txt"), "a");
  const NcclTestsRun run = parse_nccl_tests(tagged, "tagged");
  CHECK(run.ranks == 8);
  REQUIRE(run.rows.size() == plain.rows.size());
  for (size_t i = 0; i < run.rows.size(); ++i) {
    CHECK(run.rows[i].size_bytes == plain.rows[i].size_bytes);
    CHECK(run.rows[i].ip_busbw_gbps == plain.rows[i].ip_busbw_gbps);
  }
  CHECK(run.avg_busbw_gbps == plain.avg_busbw_gbps);
}

TEST_CASE("nccl-tests in-place cells that are N/A or blank read as NaN") {
  // 2.17 layout without validation (-c 0: #wrong is N/A), one in-place group not measured, one N/A.
  const std::string text =
      "# Collective test starting: sendrecv_perf\n"
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong \n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n"
      "     1048576        262144     float     sum      -1    24.10   43.51   43.51     N/A    23.95   43.78   43.78     N/A\n"
      "     2097152        524288     float     sum      -1    36.80   56.99   56.99     N/A                                    \n"
      "     4194304       1048576     float     sum      -1    61.20   68.53   68.53     N/A      N/A     N/A     N/A     N/A\n";
  const NcclTestsRun run = parse_nccl_tests(text, "sendrecv.txt");
  CHECK(run.collective == "send_recv");
  CHECK(std::isnan(run.avg_busbw_gbps));  // no "# Avg bus bandwidth" line
  REQUIRE(run.rows.size() == 3);
  CHECK(run.rows[0].oop_wrong == -1);
  CHECK(run.rows[0].ip_time_us == 23.95);
  for (size_t i : {1, 2}) {
    const NcclTestsRow& r = run.rows[i];
    CHECK(r.oop_busbw_gbps > 0);
    CHECK(std::isnan(r.ip_time_us));
    CHECK(std::isnan(r.ip_algbw_gbps));
    CHECK(std::isnan(r.ip_busbw_gbps));
    CHECK(r.ip_wrong == -1);
  }
}

TEST_CASE("nccl-tests groups follow the out-of-place / in-place line, blank cells their header") {
  // In-place printed first; an alltoall with a blank redop cell; a max-error flagged with '*'.
  const std::string text =
      "#                                                     in-place                       out-of-place\n"
      "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "     1048576         32768   float            50.00   20.97   18.35  0e+00    40.00   26.21   22.94  1e+00*\n";
  const NcclTestsRun run = parse_nccl_tests(text, "a2a.txt");
  CHECK(run.collective.empty());  // nothing names the binary
  REQUIRE(run.rows.size() == 1);
  const NcclTestsRow& r = run.rows[0];
  CHECK(r.type == "float");
  CHECK(r.redop.empty());
  CHECK(r.ip_time_us == 50.00);
  CHECK(r.oop_time_us == 40.00);
  CHECK(r.ip_error == 0);
  CHECK(r.oop_error == 1);
}

TEST_CASE("nccl-tests extra columns of newer versions are skipped") {
  // -R (report timestamps, a two-word cell) and --bitwise-style extra columns.
  const std::string text =
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong  #bitdiff     time   algbw   busbw  #wrong  #bitdiff           timestamp\n"
      "     1048576        262144     float     sum      -1    24.10   43.51   76.14       0         0    23.95   43.78   76.62       0         0  2025-01-01 12:00:00\n";
  const NcclTestsRun run = parse_nccl_tests(text, "ts.txt");
  REQUIRE(run.rows.size() == 1);
  CHECK(run.rows[0].oop_busbw_gbps == 76.14);
  CHECK(run.rows[0].ip_time_us == 23.95);
  CHECK(run.rows[0].ip_wrong == 0);
}

// ---- bad input: one line naming the file, the line (and column) and the rule --------------------

namespace {

const std::string kSample = "nccl-tests-all-reduce-8xa100.txt";

std::string with_row(const std::string& from, const std::string& to) {
  return test::replace_once(read_data(kSample), from, to);
}

}  // namespace

TEST_CASE("nccl-tests bad input: an empty file") {
  for (const std::string text : {"", " \n\n"})
    test::require_input_error([&] { parse_nccl_tests(text, "empty.txt"); }, "line 1",
                              {"empty.txt", "the file is empty"});
}

TEST_CASE("nccl-tests bad input: no header row") {
  const std::string text = "$ ./build/all_reduce_perf -b 8 -e 128M\n"
                           "         8             2   float     sum    10.56    0.00    0.00  0e+00\n"
                           "all_reduce_perf: error while loading shared libraries: libnccl.so.2\n";
  test::require_input_error([&] { parse_nccl_tests(text, "x.txt"); }, "lines 1-3",
                            {"no column header row", "time", "algbw", "busbw"});
  test::require_input_error(
      [&] { parse_nccl_tests(read_data("megatron-lm-gpt-1.7b-32xa100.log"), "lm.log"); },
      "lines 1-13", {"lm.log", "no column header row"});
}

TEST_CASE("nccl-tests bad input: a header with no data rows") {
  std::string text = read_data(kSample);
  text = text.substr(0, text.find("           8             2"));
  test::require_input_error([&] { parse_nccl_tests(text, "cut.txt"); }, "line 22",
                            {"no data rows follow the column header"});
}

TEST_CASE("nccl-tests bad input: a data row with the wrong number of fields") {
  const std::string row = "        4096          1024     float     sum      -1    10.87    0.38    0.66      0";
  const std::string text = with_row(row, row + "    1");  // a 14th field
  test::require_input_error([&] { parse_nccl_tests(text, "x.txt"); },
                            "line " + std::to_string(test::line_of(text, row)),
                            {"has 14 fields", "the column header at line 22 names 13"});
  // The in-place busbw value lost: not a blank group (a group not measured), fields missing.
  const std::string short_row =
      with_row(row + "    10.82    0.38    0.66      0\n", row + "    10.82    0.38      0\n");
  test::require_input_error([&] { parse_nccl_tests(short_row, "x.txt"); },
                            "line " + std::to_string(test::line_of(short_row, row)),
                            {"has 12 fields", "names 13"});
}

TEST_CASE("nccl-tests bad input: a negative or non-finite time") {
  const std::string line = "          16             4     float     sum      -1    10.64";
  const std::string neg = with_row(line, "          16             4     float     sum      -1   -10.64");
  const std::string where = "line " + std::to_string(test::line_of(neg, "     float     sum      -1   -10.64"));
  test::require_input_error([&] { parse_nccl_tests(neg, "x.txt"); }, where + ", out-of-place time",
                            {"x.txt", "must be a finite number >= 0", "\"-10.64\""});
  const std::string inf = with_row("    10.49    0.00    0.00      0\n", "      inf    0.00    0.00      0\n");
  test::require_input_error([&] { parse_nccl_tests(inf, "x.txt"); },
                            "line " + std::to_string(test::line_of(inf, "   inf ")) + ", in-place time",
                            {"must be a finite number >= 0", "\"inf\""});
  const std::string nan = with_row("    10.64    0.00    0.00      0", "      nan    0.00    0.00      0");
  test::require_input_error([&] { parse_nccl_tests(nan, "x.txt"); },
                            "line " + std::to_string(test::line_of(nan, "   nan ")) + ", out-of-place time",
                            {"\"nan\""});
}

TEST_CASE("nccl-tests bad input: a negative bandwidth or a non-numeric count") {
  const std::string bw = with_row("  136.15  238.27", "  136.15 -238.27");
  test::require_input_error([&] { parse_nccl_tests(bw, "x.txt"); },
                            "line " + std::to_string(test::line_of(bw, "-238.27")) + ", out-of-place busbw",
                            {"must be a finite number >= 0"});
  const std::string count = with_row("         128            32", "         128          32.5");
  test::require_input_error([&] { parse_nccl_tests(count, "x.txt"); },
                            "line " + std::to_string(test::line_of(count, "32.5")) + ", count",
                            {"must be a whole number >= 0", "\"32.5\""});
}

TEST_CASE("nccl-tests bad input: a #wrong count beyond what a count can be (fuzz finding)") {
  // fuzz_nccl_tests: a #wrong of 8.9e127 passed the whole-number check and overflowed the
  // conversion to a 64-bit count (UBSan). Counts are bounded by 2^53, the last exact double.
  const std::string row = "        4096          1024     float     sum      -1    10.87    0.38    0.66      0";
  const std::string big = with_row(row, row + "88888888888888888888");  // 8.9e19
  test::require_input_error([&] { parse_nccl_tests(big, "x.txt"); },
                            "line " + std::to_string(test::line_of(big, row)) + ", out-of-place #wrong",
                            {"must be a whole number from 0 to 2^53 or N/A", "088888888888888888888"});
  const std::string huge = with_row(row, row + std::string(120, '8'));
  test::require_input_error([&] { parse_nccl_tests(huge, "x.txt"); },
                            "line " + std::to_string(test::line_of(huge, row)) + ", out-of-place #wrong",
                            {"from 0 to 2^53"});
  // 2^53 itself is a count.
  const std::string edge = with_row(row + "    10.82", "        4096          1024     float     sum      -1    10.87    0.38    0.66  9007199254740992    10.82");
  CHECK(parse_nccl_tests(edge, "x.txt").rows.size() > 0);
}

TEST_CASE("nccl-tests bad input: processes that each ran alone, two tests in one file") {
  // nccl-tests built without MPI=1 and started by mpirun: every process is rank 0.
  const std::string alone = with_row("#  Rank  1 Group  0", "#  Rank  0 Group  0");
  test::require_input_error([&] { parse_nccl_tests(alone, "x.txt"); }, "line 6",
                            {"rank 0 is listed again (first at line 5)", "MPI=1"});
  const std::string two = read_data("nccl-tests-all-reduce-2x8xa100.txt");
  test::require_input_error([&] { parse_nccl_tests(two + two, "x.txt"); }, "line 49",
                            {"a second test starts here (the first at line 3)"});
}

TEST_CASE("nccl-tests bad input: a header that does not name out-of-place and in-place groups") {
  const std::string three = "#  size  count  type  time  algbw  busbw  time  algbw  busbw  time  algbw  busbw\n";
  test::require_input_error([&] { parse_nccl_tests(three + "8 2 float 1 0 0 1 0 0 1 0 0\n", "x.txt"); },
                            "line 1", {"3 time columns"});
  const std::string no_busbw = "#  size  count  type  time  algbw  busbw  time  algbw\n";
  test::require_input_error([&] { parse_nccl_tests(no_busbw + "8 2 float 1 0 0 1 0\n", "x.txt"); },
                            "line 1", {"no busbw column in its second"});
}

// ---- output pasted without its command line: the table names the collective ---------------------
// nccl-tests before 2.15 print no test name, so a paste without the "$ ./all_reduce_perf ..." line
// names nothing. nccl-tests' own definitions (src/all_reduce.cu, all_gather.cu, ... *GetBw) tell
// the collective apart: busbw = algbw * 2(n-1)/n for all_reduce, (n-1)/n for all_gather,
// reduce_scatter and alltoall, 1 for broadcast, reduce and sendrecv; the size column is n x count
// x the type's size for all_gather, reduce_scatter and alltoall (count is per rank), count x the
// type's size for the others (src/common.cu TimeTest, writeBenchmarkLinePreamble in src/util.cu).

namespace {

std::string without_command_line(const std::string& text) {
  REQUIRE(text.rfind("$ ./build/", 0) == 0);
  return text.substr(text.find('\n') + 1);
}

// The fit the refit added for source `name`, or nullptr.
const CollectiveFit* fit_from(const EfficiencyProfile& p, const std::string& name) {
  for (const CollectiveFit& f : p.communication)
    if (f.source.find(name) != std::string::npos) return &f;
  return nullptr;
}

void check_all_reduce_on_8(const std::string& text, const std::string& name) {
  const NcclTestsRun run = parse_nccl_tests(text, name);
  CHECK(run.collective.empty());
  const EfficiencyProfile p = refit_from_nccl_tests(load_profile("a100-megatron"), run, name);
  const CollectiveFit* f = fit_from(p, name);
  REQUIRE(f != nullptr);
  CHECK(f->collective == Collective::all_reduce);  // 233.80 / 133.60 = 1.75 = 2(8-1)/8
  CHECK(f->ranks == 8);
  CHECK_FALSE(f->inter_node);
}

}  // namespace

TEST_CASE("nccl-tests 2.13 output without its command line is an all_reduce by its busbw/algbw") {
  check_all_reduce_on_8(without_command_line(read_data(kSample)), "no-command.txt");
}

TEST_CASE("nccl-tests output pasted from markdown: indented, inside ``` fences") {
  std::istringstream in(without_command_line(read_data(kSample)));
  std::string md = "The all-reduce on our node:\n\n```text\n";
  for (std::string line; std::getline(in, line);) md += "    " + line + "\n";
  md += "```\n";
  check_all_reduce_on_8(md, "issue.md");
}

TEST_CASE("nccl-tests output behind Open MPI 5's --output tag prefix reads the same") {
  // Open MPI 5 (PRRTE) tags "[<job id>,<rank>]<stdout>: " with the job's namespace and a space,
  // where Open MPI 4 printed "[1,0]<stdout>:" (as filtered by ExaWorks psij-python's Open MPI
  // launcher scripts, one sed for each form).
  std::istringstream in(without_command_line(read_data(kSample)));
  std::string tagged;
  for (std::string line; std::getline(in, line);)
    tagged += "[prterun-dgx-a100-01-41870@1,0]<stdout>: " + line + "\n";
  check_all_reduce_on_8(tagged, "ompi5.txt");
}

namespace {

// The 2.13+ column header (src/util.cu writeResultHeader) and a body of rows.
std::string table_of(const std::string& rows) {
  return "#                                                              out-of-place                       in-place          \n"
         "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
         "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n" +
         rows;
}

// The rows of a sample from its column header on: a table pasted alone.
std::string table_only(const std::string& text) {
  const size_t at = text.find("#                                                              out-of-place");
  REQUIRE(at != std::string::npos);
  return text.substr(at);
}

}  // namespace

TEST_CASE("nccl-tests table alone: all_reduce, and its ranks from busbw/algbw") {
  const NcclTestsRun run = parse_nccl_tests(table_only(read_data(kSample)), "t.txt");
  CHECK(run.ranks == 0);
  CHECK(run.gpus_per_process == 0);
  const NcclTestsIdentity id = identify_nccl_tests(run, "", "t.txt");
  CHECK(id.collective == "all_reduce");
  // 233.80 / 133.60 = 1.74999 +- 1.1e-4 (both printed to 0.005): 2(n-1)/n within it only for n = 8.
  CHECK(id.ranks == 8);
  CHECK(id.nodes == 0);  // a table does not say where the ranks ran
  CHECK(id.ranks_per_node == 0);
}

TEST_CASE("nccl-tests table alone: reduce_scatter by its operator and size = n x count x 4") {
  // 8 ranks, float: count per rank = size / 32; algbw = size / time; busbw = algbw x 7/8.
  // 1073741824 / 7000 us = 153.39 GB/s, x 7/8 = 134.22; 536870912 / 3600 us = 149.13, 130.49.
  const std::string text = table_of(
      "   536870912      16777216     float     sum      -1   3600.0  149.13  130.49      0   3610.0  148.72  130.13      0\n"
      "  1073741824      33554432     float     sum      -1   7000.0  153.39  134.22      0   7010.0  153.17  134.03      0\n");
  const NcclTestsIdentity id = identify_nccl_tests(parse_nccl_tests(text, "rs.txt"), "", "rs.txt");
  CHECK(id.collective == "reduce_scatter");
  CHECK(id.ranks == 8);
}

TEST_CASE("nccl-tests table alone: broadcast by its root, busbw = algbw") {
  const std::string text = table_of(
      "  1073741824     268435456     float    none       0   5000.0  214.75  214.75      0   4990.0  215.18  215.18      0\n");
  CHECK(identify_nccl_tests(parse_nccl_tests(text, "b.txt"), "", "b.txt").collective == "broadcast");
}

TEST_CASE("nccl-tests table that fits several collectives is refused, naming them and --collective") {
  // all_gather and alltoall print the same table (redop none, root -1, size = n x count x 4).
  const std::string ag = table_of(
      "  1073741824      33554432     float    none      -1   7000.0  153.39  134.22      0   7010.0  153.17  134.03      0\n");
  test::require_input_error([&] { identify_nccl_tests(parse_nccl_tests(ag, "ag.txt"), "", "ag.txt"); },
                            "collective",
                            {"ag.txt", "does not name its *_perf binary", "fits all_gather or alltoall",
                             "name it with --collective"});
  CHECK(identify_nccl_tests(parse_nccl_tests(ag, "ag.txt"), "all_gather", "ag.txt").ranks == 8);
  // A 2-rank all_reduce has busbw = algbw x 2(2-1)/2 = algbw, as sendrecv always has.
  const std::string two = table_of(
      "  1073741824     268435456     float     sum      -1   5000.0  214.75  214.75      0   4990.0  215.18  215.18      0\n");
  test::require_input_error([&] { identify_nccl_tests(parse_nccl_tests(two, "two.txt"), "", "two.txt"); },
                            "collective", {"fits all_reduce or send_recv"});
  // 2021 versions print no redop column: all_gather, reduce_scatter and alltoall look the same.
  const std::string old = without_command_line(read_data("nccl-tests-all-gather-2021-8xv100.txt"));
  test::require_input_error(
      [&] { identify_nccl_tests(parse_nccl_tests(old, "old.txt"), "", "old.txt"); }, "collective",
      {"8 ranks", "no redop column", "fits all_gather, reduce_scatter or alltoall"});
  CHECK(identify_nccl_tests(parse_nccl_tests(old, "old.txt"), "all_gather", "old.txt").collective == "all_gather");
}

TEST_CASE("nccl-tests --collective must agree with the output's own name, and be a nccl-tests collective") {
  const NcclTestsRun run = parse_nccl_tests(read_data(kSample), "s.txt");
  test::require_input_error([&] { identify_nccl_tests(run, "all_gather", "s.txt"); }, "collective",
                            {"s.txt", "the output names all_reduce but --collective says all_gather"});
  CHECK(identify_nccl_tests(run, "all_reduce", "s.txt").collective == "all_reduce");
  test::require_input_error([&] { identify_nccl_tests(run, "allreduce", "s.txt"); }, "--collective",
                            {"command line", "must be one of", "\"allreduce\""});
}

// ---- fits the sizes barely constrain ------------------------------------------------------------

TEST_CASE("a fit from two large sizes is kept, with one warning naming the file") {
  // 512 MiB in 4743.9 us and 1 GiB in 8828.8 us: the line through both has slope 4084.9 us per
  // 512 MiB and meets size 0 at alpha = 4743.9 - 4084.9 = 659.0 us.
  const std::string name = "nccl-tests-all-reduce-2-sizes-8xa100.txt";
  const NcclTestsRun run = parse_nccl_tests(read_data(name), name);
  std::vector<std::string> warnings;
  const EfficiencyProfile p = refit_from_nccl_tests(load_profile("a100-megatron"), run, name, "", &warnings);
  const CollectiveFit* f = fit_from(p, name);
  REQUIRE(f != nullptr);
  CHECK(f->alpha_s == Approx(659.0e-6).epsilon(1e-4));
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].rfind(name + ": ", 0) == 0);
  CHECK(warnings[0].find("2 sizes") != std::string::npos);
  CHECK(warnings[0].find("none <= 64 KiB") != std::string::npos);
  CHECK(warnings[0].find("659.0 us") != std::string::npos);
  CHECK(warnings[0].find('\n') == std::string::npos);
}

TEST_CASE("a sweep with no size <= 64 KiB warns; one from 8 B does not") {
  std::vector<std::string> warnings;
  // 2x8 sample: 15 sizes from 1 MiB.
  (void)refit_from_nccl_tests(load_profile("a100-megatron"),
                              parse_nccl_tests(read_data("nccl-tests-all-reduce-2x8xa100.txt"), "2x8"),
                              "2x8", "", &warnings);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("15 sizes (1048576-17179869184 B), none <= 64 KiB") != std::string::npos);
  warnings.clear();
  (void)refit_from_nccl_tests(load_profile("a100-megatron"), parse_nccl_tests(read_data(kSample), "8"),
                              "8", "", &warnings);
  CHECK(warnings.empty());
}
