#pragma once
// The spellings of an enum's values, for readers that accept them and refusals that list them.
#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace parallax {

// The spelling (to_string's) of every value in `all`, in its order.
template <class E, std::size_t N>
std::vector<const char*> names_of(const std::array<E, N>& all) {
  std::vector<const char*> out;
  for (E e : all) out.push_back(to_string(e));
  return out;
}

// The value of `all` spelled `spelling`; all[0] where none is (readers check the spelling first).
template <class E, std::size_t N>
E enum_from(const std::string& spelling, const std::array<E, N>& all) {
  for (E e : all)
    if (spelling == to_string(e)) return e;
  return all[0];
}

}  // namespace parallax
