#pragma once
// The model / cluster / job / plan flags shared by predict (and later simulate and plan), and their
// resolution into validated specs.
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "parallax/core/plan_file.hpp"
#include "parallax/costmodel/profile.hpp"

namespace parallax::cli {

struct PlanOptions {
  std::string model = "mt-nlg-530b";
  std::string cluster = "dgx-a100-superpod";
  std::string gpus = "2240";
  std::string global_batch = "1920";
  std::string tp = "8";
  std::string pp = "35";
  std::string vpp = "1";
  std::string mbs = "1";
  bool sp = false;
  std::string recompute = "full";
  std::string recompute_layers = "0";
  std::string zero = "0";
  std::string schedule;  // default: interleaved when vpp > 1, else 1f1b
  std::string order = "tp-dp-pp";
  std::string dtype = "bf16";
  std::string bytes_per_param = "18";
  std::string framework = "megatron-lm";
  std::string tokens;
  std::string price;
  std::string profile;  // default: the cluster's profile
};

void add_plan_options(CLI::App& app, PlanOptions& o);

struct Resolved {
  PlanFile file;
  EfficiencyProfile profile;
};

// Loads presets/files, applies the rules of JSON input and validate_plan; errors name the flag.
Resolved resolve(const PlanOptions& o);

}  // namespace parallax::cli
