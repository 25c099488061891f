// The table of an iteration's time parts (time_breakdown.hpp) against TimeBreakdown's fields,
// written out by hand here: every field once, summed in full, named once per view.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "parallax/costmodel/time_breakdown.hpp"

using namespace parallax;

TEST_CASE("time parts: the table holds every TimeBreakdown field once and sums them all") {
  TimeBreakdown t;
  // Powers of two: any field missing from the sum, or counted twice, changes it exactly.
  t.compute_s = 1;
  t.tp_comm_s = 2;
  t.cp_comm_s = 4;
  t.ep_comm_s = 8;
  t.moe_host_s = 16;
  t.pp_comm_s = 32;
  t.dp_comm_exposed_s = 64;
  t.bubble_s = 128;
  t.optimizer_s = 256;
  CHECK(t.total_s() == 511);
  std::set<double> seen;
  std::set<std::string> keys, names, descriptions;
  for (const TimePartInfo& p : kTimeParts) {
    seen.insert(t.*p.seconds);
    keys.insert(p.json_key);
    names.insert(p.name);
    descriptions.insert(p.description);
  }
  CHECK(seen.size() == 9);
  CHECK(keys.size() == 9);
  CHECK(names.size() == 9);
  CHECK(descriptions.size() == 9);
  CHECK(keys.count("dp_comm_exposed_s") == 1);
}

TEST_CASE("time parts: only context parallelism, expert parallelism and the host wait are some plans'") {
  std::set<std::string> some;
  for (const TimePartInfo& p : kTimeParts)
    if (p.some_plans_only) some.insert(p.json_key);
  CHECK(some == std::set<std::string>{"cp_comm_s", "ep_comm_s", "moe_host_s"});
}
