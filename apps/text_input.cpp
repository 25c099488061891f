#include "text_input.hpp"

#include <fstream>
#include <sstream>

#include "parallax/core/error.hpp"

namespace parallax::cli {

std::string read_stream(std::istream& in) {
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "$", "cannot read file");
  return read_stream(in);
}

}  // namespace parallax::cli
