#include "parallax/core/dense_only.hpp"

#include "parallax/core/error.hpp"

namespace parallax {

void refuse_moe(const ModelSpec& m, const std::string& source, const std::string& path) {
  if (!m.is_moe()) return;
  throw InputError(source, path,
                   "mixture-of-experts models (num_experts " + std::to_string(m.moe.num_experts) +
                       ") are not costed, planned, simulated, exported or run yet (docs/moe.md)");
}

}  // namespace parallax
