#pragma once
// What the window computes in the background, as plain functions over the planner API (no cost or
// search logic here): the search with its winner simulated, one more plan simulated on demand, and
// the scaling curve. Each may run on a worker thread; none touches Qt.
#include <cstdint>
#include <memory>
#include <vector>

#include "parallax/costmodel/intervals.hpp"
#include "parallax/planner/capacity.hpp"
#include "parallax/planner/planner.hpp"
#include "parallax/simulator/simulate.hpp"
#include "parallax/topologies/topology.hpp"
#include "what_if_inputs.hpp"

namespace parallax::gui {

struct PlanOutcome {
  PlannerInputs in;
  std::shared_ptr<const Topology> topo;  // the search's; reused to simulate other plans
  SearchResult search;                   // plans non-empty
  SimResult winner_sim;                  // plans.front(), every op recorded
  // Each plan's 80% prediction interval, and which plans are tied with the winner (intervals.hpp).
  std::vector<PredictionInterval> intervals;
  TieRule ties;
  double compute_s = 0;                  // resolve + search + simulate, on the worker
};

// Resolves the inputs (InputError as the CLI), searches as `parallax plan` does (the top k re-timed
// by the simulator) and simulates the winner. No plan: no_plan_error(), as `parallax plan` exits.
PlanOutcome plan_what_if(const WhatIfInputs& w);

// One iteration of the outcome's plan `index`, every op recorded (for the timeline).
SimResult simulate_ranked(const PlanOutcome& o, size_t index);

struct ScalingOutcome {
  std::vector<CapacityRow> rows;  // the report's GPU counts (default_scaling_counts)
  // Each row's 80% prediction interval (an empty one where the row has no plan).
  std::vector<PredictionInterval> intervals;
  int64_t current_gpus = 0;
  double tokens = 0;            // tokens_or_default
  bool tokens_assumed = false;  // no tokens given
  double price_per_gpu_hour_usd = 0;
};

// The report's scaling curve for the same question (tokens_or_default, the job's price).
ScalingOutcome scaling_what_if(const PlannerInputs& in);

}  // namespace parallax::gui
