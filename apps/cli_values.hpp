#pragma once
// Parsing of numeric command-line values with the same rules as JSON input: one-line errors that
// name the flag and the rule (InputError with source "command line").
#include <cstdint>
#include <string>

namespace parallax::cli {

int64_t parse_int(const std::string& flag, const std::string& text, int64_t min, int64_t max);
double parse_number(const std::string& flag, const std::string& text, double min, double max);

}  // namespace parallax::cli
