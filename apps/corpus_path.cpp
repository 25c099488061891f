#include "corpus_path.hpp"

#include <algorithm>
#include <filesystem>

#include "parallax/core/error.hpp"

namespace parallax::cli {

std::string default_corpus_path() {
  const std::string rel = "validation/runs";
  if (std::filesystem::exists(rel)) return rel;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto beside = exe.parent_path().parent_path() / rel;
    if (std::filesystem::exists(beside)) return beside.string();
  }
  return rel;  // reading reports it missing
}

Corpus load_corpus(std::vector<std::string> paths, const std::vector<std::string>& exclude) {
  if (paths.empty()) paths.push_back(default_corpus_path());
  Corpus c = read_corpus(paths);
  for (const std::string& s : exclude) {
    bool known = false;
    for (const auto& [source, group] : c.group_of_source) known = known || s == source || s == group;
    if (!known) {
      throw InputError("command line", "--exclude-source",
                       "\"" + s + "\" is no source of the corpus (see validate --group-by source)");
    }
  }
  auto excluded = [&](const std::string& source, const std::string& group) {
    return std::find(exclude.begin(), exclude.end(), source) != exclude.end() ||
           std::find(exclude.begin(), exclude.end(), group) != exclude.end();
  };
  std::erase_if(c.runs, [&](const PublishedRun& r) { return excluded(r.source, r.group); });
  std::erase_if(c.unsupported, [&](const UnsupportedRun& r) {
    return excluded(r.source, c.group_of_source.at(r.source));
  });
  return c;
}

}  // namespace parallax::cli
