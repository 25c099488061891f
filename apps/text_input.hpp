#pragma once
// Whole text inputs of the commands: a file (InputError when it cannot be read) or a stream.
#include <istream>
#include <string>

namespace parallax::cli {

std::string read_text(const std::string& path);
std::string read_stream(std::istream& in);

}  // namespace parallax::cli
