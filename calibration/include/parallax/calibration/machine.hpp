#pragma once
// Facts of the machine and the day that calibration records: shared by the sweep's launcher and
// ranks and by `parallax calibrate`'s refits.
#include <string>

namespace parallax::calib {

// Hardware threads of this machine (at least 1): the CPU sweep's default rank count and the
// cores its ranks share.
int machine_cores();

// Today's date in UTC, "2026-11-25": a profile's provenance date.
std::string utc_date();

}  // namespace parallax::calib
