#pragma once
// The plan's fields, declared once (Megatron-Core's ModelParallelConfig is the anchor: one
// dataclass its arguments come from). Each has its JSON key, type, rule and default, the
// command-line flag that sets it (the recipe key is the flag's name with '_' for '-'), its help,
// the Megatron-LM flag that says it one to one and its DeepSpeed config key. From this list come:
// the plan's JSON reader and writer (spec_json.cpp, spec_to_json.cpp), the CLI's plan flags
// (apps/plan_options.cpp) and their resolution into a plan (inputs/job_flags.cpp), the recipe
// reader (inputs/flag_file.cpp), the flag an error names, the Megatron-LM exporters' and
// importer's one-to-one flags and the DeepSpeed config's keys. A new plan field is a row here and
// its semantics: what validate_plan, the cost model and the exports do with it.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "parallax/core/plan_spec.hpp"

namespace parallax {

class JsonObjectReader;

enum class FieldType : int8_t {
  integer,  // int64_t, in [min, max]
  on_off,   // bool: a switch on the command line, true or false in files
  name,     // an enum's or a string's spelling, read and written by the row's functions
};

struct PlanField {
  const char* key;  // in $.plan
  FieldType type;
  int64_t PlanSpec::*integer = nullptr;  // integer fields
  bool PlanSpec::*on_off = nullptr;      // on_off fields
  int64_t min = 0, max = 0;              // integer fields: the rule
  // Integer fields: a file must give it, or its absence means `absent` (0 may stand for "the
  // default", below min: etp 0 = tp). on_off fields: absent = false.
  bool required = false;
  int64_t absent = 0;
  // The plan's JSON has it at its default too (else only where it differs, so that files of plans
  // without it stay as they were).
  bool always_written = false;
  // The flag that sets it on the command line. With `derived`, the field has no flag of its own
  // and this is the one it comes from (dp from --gpus), which an error about it names.
  const char* flag = nullptr;
  bool derived = false;
  const char* flag_default = "";  // as typed; "": absent (the file reader's default)
  const char* help = "";
  // The Megatron-LM flag that says the field one to one (an integer's value, a switch's
  // presence); nullptr: none, or not one to one (the exporter and importer derive it).
  const char* megatron_flag = nullptr;
  // Where a DeepSpeed config holds the field, as a JSON pointer ("/zero_optimization/stage");
  // nullptr: nowhere one to one.
  const char* deepspeed_key = nullptr;
  // name fields: read the key (absent: the field's default) into p; its spelling in p; the
  // spelling a file leaves out ("": none, always written).
  void (*read)(JsonObjectReader& r, PlanSpec& p) = nullptr;
  std::string (*spelling)(const PlanSpec& p) = nullptr;
  const char* omitted_spelling = "";
};

// Every plan field, in the order the plan's JSON reader reads them.
std::span<const PlanField> plan_fields();
// The field at JSON key `key`, or nullptr.
const PlanField* plan_field(std::string_view key);
// The position of the field at `key` in plan_fields(); std::out_of_range for a key no field has.
size_t plan_field_index(std::string_view key);

// Whether a plan's JSON has an integer field at value v: always, or where v is not what the
// key's absence reads as.
inline bool written(const PlanField& f, int64_t v) { return f.always_written || v != f.absent; }
// The field whose Megatron-LM flag is `flag`, or nullptr.
const PlanField* plan_field_of_megatron_flag(std::string_view flag);

}  // namespace parallax
