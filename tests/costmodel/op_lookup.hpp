// The op of a layer's or head's list by name, for the cost model's hand-derived tests.
#pragma once

#include <string>
#include <vector>

#include "parallax/costmodel/ops.hpp"

namespace parallax::test {

// nullptr when the list has no op of that name.
inline const Op* find_op(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& o : ops)
    if (o.name == name) return &o;
  return nullptr;
}

}  // namespace parallax::test
