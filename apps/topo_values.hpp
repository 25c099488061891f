#pragma once
// Command-line values of the topology commands: rank lists and message sizes.
#include <cstdint>
#include <string>
#include <vector>

namespace parallax::cli {

// "0-63", "0,8,16", "0-7,16-23": ranks in the order given; duplicates are an error.
std::vector<int64_t> parse_rank_list(const std::string& flag, const std::string& text);
// Bytes as nccl-tests' -b/-e take them: a number with an optional K, M or G suffix (powers of
// 1024), e.g. "1G" = 1073741824; or plain/scientific ("1e9"). Must be > 0.
double parse_bytes(const std::string& flag, const std::string& text);

}  // namespace parallax::cli
