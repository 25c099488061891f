#include "parallax/calibration/machine.hpp"

#include <algorithm>
#include <ctime>
#include <thread>

namespace parallax::calib {

int machine_cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

std::string utc_date() {
  const std::time_t now = std::time(nullptr);
  char d[32];
  std::strftime(d, sizeof(d), "%Y-%m-%d", std::gmtime(&now));
  return d;
}

}  // namespace parallax::calib
