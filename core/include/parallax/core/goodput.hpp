#pragma once
// The share of a training run's wall time spent training (its goodput): the rest goes to failures,
// restarts, lost work since the last checkpoint and checkpoint stalls. A preset
// (presets/goodput/) with its source; capacity's wall-clock days divide by it.
#include <string>

namespace parallax {

class JsonObjectReader;

struct Goodput {
  std::string name;
  std::string source;
  double effective_training_share = 1;  // in (0, 1]
};

Goodput read_goodput(JsonObjectReader& r);

}  // namespace parallax
