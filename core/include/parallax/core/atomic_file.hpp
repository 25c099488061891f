#pragma once
// Writes a whole file or nothing: the text goes to "<path>.tmp.<pid>" and is renamed over path.
// On any failure the temp file is removed and InputError(path, flag, reason) is thrown, `flag`
// naming the option that gave the path.
#include <string>

namespace parallax {

void write_file_atomic(const std::string& path, const std::string& text,
                       const std::string& flag = "--out");

}  // namespace parallax
