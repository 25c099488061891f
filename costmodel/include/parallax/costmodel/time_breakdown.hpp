#pragma once
// An iteration's time in parts, and the one table of those parts that every view iterates: the
// text and JSON tables of predict and plan, the charts of the report and the GUI, the planner's
// explanation of why one plan beats another. A new part is a field here and a row of kTimeParts.
namespace parallax {

// Parts of the critical (slowest) pipeline stage's timeline; they add up to the iteration time.
struct TimeBreakdown {
  double compute_s = 0;
  double tp_comm_s = 0;
  double cp_comm_s = 0;  // the context-parallel ring's exposed sends
  double ep_comm_s = 0;  // mixture of experts: the token all-to-alls (and etp gathers)
  double moe_host_s =
      0;  // mixture of experts: the GPU waiting for the host (host-bound MoE layers)
  double pp_comm_s = 0;
  double dp_comm_exposed_s = 0;
  double bubble_s = 0;
  double optimizer_s = 0;
  // The iteration time: the parts summed in kTimeParts' order.
  double total_s() const;
};

struct TimePartInfo {
  double TimeBreakdown::*seconds;
  const char* json_key;     // in the "time" object of predict --json and plan --json
  const char* name;         // short: charts, the planner's comparison of two plans
  const char* description;  // a row of predict's and plan's time table
  // A part only some plans have (context and expert parallelism, host-bound MoE layers): charts
  // and the time table show it where it is not zero, the time table after the others.
  bool some_plans_only;
};

// In timeline order, the order the parts are summed in.
inline constexpr TimePartInfo kTimeParts[] = {
    {&TimeBreakdown::compute_s, "compute_s", "compute", "compute (critical stage)", false},
    {&TimeBreakdown::tp_comm_s, "tp_comm_s", "TP comm", "tensor-parallel comm", false},
    {&TimeBreakdown::cp_comm_s, "cp_comm_s", "CP ring", "context-parallel ring (exposed)", true},
    {&TimeBreakdown::ep_comm_s, "ep_comm_s", "EP all-to-all", "expert-parallel all-to-all", true},
    {&TimeBreakdown::moe_host_s, "moe_host_s", "MoE host wait", "MoE layers waiting for the host",
     true},
    {&TimeBreakdown::pp_comm_s, "pp_comm_s", "PP p2p", "pipeline p2p", false},
    {&TimeBreakdown::bubble_s, "bubble_s", "bubble", "pipeline bubble", false},
    {&TimeBreakdown::dp_comm_exposed_s, "dp_comm_exposed_s", "DP comm",
     "data-parallel comm (exposed)", false},
    {&TimeBreakdown::optimizer_s, "optimizer_s", "optimizer", "optimizer step", false},
};

inline double TimeBreakdown::total_s() const {
  double s = 0;
  for (const TimePartInfo& p : kTimeParts) s += this->*p.seconds;
  return s;
}

}  // namespace parallax
