#pragma once
// Checkpoint files are written whole or not at all, and survive a crash once written: the parts
// go to "<path>.tmp.<pid>" with write(2), are fsync'ed, and the file is renamed over `path`.
// On failure (a full disk, say) the temporary file is removed and InputError(path, field,
// "<what failed>: <strerror(errno)>") is thrown (field: the flag that named the place).
#include <string>
#include <string_view>
#include <vector>

namespace parallax::exec {

void write_file_durably(const std::string& path, const std::vector<std::string_view>& parts,
                        const std::string& field = "--checkpoint-dir");

}  // namespace parallax::exec
