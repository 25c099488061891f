#pragma once
// Which collective a nccl-tests run measured, on how many ranks laid out how, when the output
// does not say it all. nccl-tests before 2.15 print no test name, so output pasted without its
// command line names no collective; a table pasted alone has no "#  Rank" lines either.
//
// The collective, in this order: the output's own name (test-starting line or command line);
// else `--collective` (the override); else the table, by nccl-tests' own definitions
// (src/<coll>.cu *GetBw, src/common.cu TimeTest, src/util.cu writeBenchmarkLinePreamble):
//   busbw / algbw = 2(n-1)/n   all_reduce
//                 = (n-1)/n    all_gather, reduce_scatter, alltoall
//                 = 1          broadcast, reduce, sendrecv
//   size = n x count x sizeof(type) for all_gather, reduce_scatter and alltoall (count is per
//   rank), count x sizeof(type) for the others;
//   redop "none" for all_gather, alltoall and broadcast, an operator for the others (2.13+);
//   root >= 0 for broadcast and reduce, -1 for the others (2.13+).
// The ratio is read from the row with the largest algbw (the printed 2-decimal values are
// exact to 0.005). When more than one collective fits (all_gather and alltoall always print
// the same table; a 2-rank all_reduce has busbw = algbw; a version without a redop column
// cannot tell all_gather from reduce_scatter) it is refused with one line naming the candidates
// and --collective. If the output names a collective and the override names another, that is
// refused too.
//
// Ranks: the "#  Rank N" lines; else nThread x nGpus of the "# nThread 1 nGpus 8" line (one
// process: nccl-tests prints one rank line per GPU of every process); else the table (the
// size/count multiple, or the one whole n the ratio allows). Layout (nodes, ranks per node):
// the host names of the rank lines; one node when the nThread line gave the ranks; unknown
// (0) from a table alone.
#include <cstdint>
#include <string>

#include "parallax/calibration/nccl_tests.hpp"

namespace parallax::calib {

struct NcclTestsIdentity {
  std::string collective;      // nccl-tests' names: all_reduce, ..., alltoall, send_recv
  int64_t ranks = 0;           // 0: unknown
  int64_t nodes = 0;           // 0: unknown
  int64_t ranks_per_node = 0;  // most ranks on one host; 0: unknown
};

// Throws InputError(source, "collective", ...) or (command line, --collective, ...).
NcclTestsIdentity identify_nccl_tests(const NcclTestsRun& run, const std::string& override_collective,
                                      const std::string& source);

}  // namespace parallax::calib
