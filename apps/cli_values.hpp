#pragma once
// parse_int / parse_number moved to parallax::planner (flag_inputs.hpp) so that the GUI parses its
// fields with the same rules and messages; this header stays for the subcommands that include it.
#include "parallax/planner/flag_inputs.hpp"
