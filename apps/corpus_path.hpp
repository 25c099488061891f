#pragma once
// Where the project's validation corpus is, for validate and fit run from a checkout or a build.
#include <string>
#include <vector>

#include "parallax/validation/corpus.hpp"

namespace parallax::cli {

// validation/runs beside the working directory, or beside the binary (build/parallax).
std::string default_corpus_path();

// The corpus named by --runs (default: the project's), without the rows of the excluded sources;
// an excluded name that is no source or group of the corpus is bad input.
Corpus load_corpus(std::vector<std::string> paths, const std::vector<std::string>& exclude);

}  // namespace parallax::cli
