#pragma once
// Numbers typed as flags or into GUI fields, read with the rules of JSON input: the whole text must
// parse, finite, within [min, max]. Errors are InputErrors with source "command line" and the flag
// as their path (e.g. "command line: --gpus: must be an integer in [1, 10000000] (got \"abc\")").
#include <cstdint>
#include <string>

namespace parallax {

int64_t parse_int(const std::string& flag, const std::string& text, int64_t min, int64_t max);
double parse_number(const std::string& flag, const std::string& text, double min, double max);

}  // namespace parallax
