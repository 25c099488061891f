#pragma once
// Importer for the stdout of one NVIDIA/nccl-tests *_perf binary (all_reduce_perf, ...).
//
// The table is read by its header row, the "#"-line naming the columns, e.g. (nccl-tests 2.13+)
//   #       size         count      type   redop    root     time   algbw   busbw #wrong     time ...
//   #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us) ...
// Columns are found by name. The first time/algbw/busbw/#wrong group is out-of-place, the second
// in-place, unless the "out-of-place ... in-place" line above the names says the reverse. Older
// versions are accepted: no root or redop column, an "error" column (max error, e.g. "0e+00")
// instead of "#wrong", cells left blank (an all-gather's empty redop in some versions, a group not
// measured) and "N/A" cells (no validation: -c 0). Extra columns of newer versions (#bitdiff,
// per-iteration statistics, timestamp) are skipped. An mpirun --tag-output prefix such as
// "[1,0]<stdout>:" (Open MPI 4) or "[prterun-host-123@1,0]<stdout>: " (Open MPI 5's --output tag)
// is removed from every line; output pasted indented or inside ``` fences reads the same. Other lines (NCCL INFO, warnings, the command line)
// are ignored.
//
// Units as printed: size in bytes, time in microseconds, bandwidths in GB/s (1e9 bytes/s).
// nccl-tests defines algbw = size / time and busbw = algbw * factor (2(n-1)/n for all-reduce,
// (n-1)/n for all-gather and reduce-scatter, 1 for broadcast, reduce and send/recv).
//
// Rejected with a one-line InputError (source, "line N[, column]" or "lines 1-N", rule): an empty
// file, no header row, a data row with the wrong number of fields (a blank cell counts only when it
// is a descriptive cell or a whole time/algbw/busbw group) or a non-numeric cell, a negative or
// non-finite time or bandwidth, a header with no data rows, a rank listed twice (processes that
// each ran alone: nccl-tests built without MPI), a second test in the same file.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace parallax::calib {

// One size of the sweep. NaN (or -1 for the integer fields) = not reported.
struct NcclTestsRow {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  double size_bytes = 0;
  int64_t count = 0;          // elements, as printed (per rank for all-gather)
  std::string type, redop;    // "float", "sum"; redop is "" when the version has no such column
  int64_t root = -1;          // -1 when the collective has no root or the column is absent
  double oop_time_us = kNaN, oop_algbw_gbps = kNaN, oop_busbw_gbps = kNaN;  // out-of-place
  double ip_time_us = kNaN, ip_algbw_gbps = kNaN, ip_busbw_gbps = kNaN;     // in-place
  int64_t oop_wrong = -1, ip_wrong = -1;  // "#wrong" (wrong elements); -1 = "N/A" or absent
  double oop_error = kNaN, ip_error = kNaN;  // older versions' "error" column (max error)
  int64_t line = 0;                          // 1-based line number in the source
};

struct NcclTestsRun {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  // Binary name without "_perf": all_reduce, all_gather, reduce_scatter, broadcast, reduce,
  // alltoall, gather, scatter, hypercube; sendrecv_perf is reported as "send_recv". From the
  // "# Collective test starting: all_reduce_perf" line (nccl-tests 2.15+), else from the first
  // "*_perf" word before the header (a pasted command line); "" when neither is present.
  std::string collective;
  std::string version;  // "2.17.6" from "# nccl-tests version 2.17.6 ..." when present
  int64_t ranks = 0;    // number of "#  Rank N ... device D [bus] NAME" lines (0: table only)
  int64_t nodes = 0;    // distinct host names in those lines
  int64_t gpus_per_process = 0;  // nThread x nGpus from "# nThread 1 nGpus 8 minBytes ..." (0: absent)
  bool redop_column = false;     // the column header names redop (nccl-tests 2.13+: every test)
  bool root_column = false;      // ... and root
  std::vector<std::string> devices;  // device name per rank line, e.g. "NVIDIA A100-SXM4-80GB"
  std::vector<std::string> hosts;    // host name per rank line
  std::vector<NcclTestsRow> rows;
  double avg_busbw_gbps = kNaN;  // "# Avg bus bandwidth    : 233.168" when present
};

// source names the input in error messages (a file name).
NcclTestsRun parse_nccl_tests(const std::string& text, const std::string& source);

}  // namespace parallax::calib
