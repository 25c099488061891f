// parallax presets [list|show NAME]: what is built in, and the JSON of one preset (a model's with
// its parameter counts, total and active per token, which read back as a check).
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "parallax/core/error.hpp"
#include "parallax/core/param_counts.hpp"
#include "parallax/core/presets.hpp"

namespace parallax::cli {
namespace {

struct PresetsArgs {
  std::string action = "list";
  std::string name;
};

const char* const kKinds[] = {"models", "gpus", "clusters", "profiles", "stacks", "attention"};

void run_presets(const PresetsArgs& a) {
  if (a.action == "list") {
    if (!a.name.empty()) {
      throw InputError("command line", "presets list", "takes no name (got \"" + a.name + "\")");
    }
    for (const char* kind : kKinds) {
      std::cout << kind << ":";
      for (const std::string& n : preset_names(kind)) std::cout << ' ' << n;
      std::cout << '\n';
    }
    return;
  }
  if (a.name.empty()) throw InputError("command line", "presets show", "needs a preset name");
  // A name may be given bare (searched in every kind) or as KIND/NAME.
  std::string kind;
  std::string name = a.name;
  if (auto slash = name.find('/'); slash != std::string::npos) {
    kind = name.substr(0, slash);
    name = name.substr(slash + 1);
  }
  for (const char* k : kKinds) {
    if (!kind.empty() && kind != k) continue;
    for (const std::string& n : preset_names(k)) {
      if (n == name) {
        nlohmann::json j = preset_json(k, n);
        if (std::string(k) == "models") j["parameters"] = param_counts_json(load_model(n));
        std::cout << j.dump(2) << '\n';
        return;
      }
    }
  }
  throw InputError("command line", "presets show",
                   "unknown preset \"" + a.name + "\" (see `parallax presets list`)");
}

}  // namespace

void add_presets_command(CLI::App& app) {
  auto args = std::make_shared<PresetsArgs>();
  CLI::App* sub = app.add_subcommand("presets", "list the built-in presets or show one");
  sub->add_option("action", args->action, "list | show")
      ->check(CLI::IsMember({"list", "show"}))
      ->capture_default_str();
  sub->add_option("name", args->name, "preset name (or KIND/NAME) for show");
  sub->callback([args] { run_presets(*args); });
}

}  // namespace parallax::cli
