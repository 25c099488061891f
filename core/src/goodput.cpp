#include "parallax/core/goodput.hpp"

#include "parallax/core/json_reader.hpp"

namespace parallax {

Goodput read_goodput(JsonObjectReader& r) {
  Goodput g;
  g.name = r.get_string_or("name", "");
  g.source = r.get_string_or("source", "");
  g.effective_training_share = r.get_number("effective_training_share", 0, 1);
  if (g.effective_training_share <= 0)
    r.fail("effective_training_share", "must be > 0: a run that never trains never finishes");
  r.finish();
  return g;
}

}  // namespace parallax
