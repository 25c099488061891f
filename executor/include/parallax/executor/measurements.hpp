#pragma once
// measurements.json and the Chrome trace, gathered from every rank to rank 0.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallax/executor/comm/groups.hpp"
#include "parallax/executor/recorder.hpp"

namespace parallax::exec {

// This rank's part: per-op and per-collective aggregates, peak resident bytes.
nlohmann::json rank_measurements(const Recorder& rec, const ProcessGroups& g);
// Chrome trace events of this rank (pid = world rank, tid = stream), with metadata.
nlohmann::json rank_trace_events(const Recorder& rec, const ProcessGroups& g);
// Gathers one JSON value per rank to rank 0 (returns the array there, empty elsewhere).
std::vector<nlohmann::json> gather_json(const nlohmann::json& mine, const Group& world);
// Peak resident set of this process in bytes (getrusage).
double peak_resident_bytes();

}  // namespace parallax::exec
