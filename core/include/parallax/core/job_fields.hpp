#pragma once
// The job's fields, declared once, as plan_fields.hpp declares the plan's. Each has its JSON key,
// type, rule and default, the command-line flag that sets it (the recipe key is the flag's name
// with '_' for '-') and its help, and the Megatron-LM flag that says it one to one. From this list
// come: the job's JSON reader and writer (spec_json.cpp, spec_to_json.cpp), the CLI's job flags
// and their resolution into a job (inputs/job_flags.cpp), the recipe keys (inputs/flag_file.cpp),
// the flag an error names, and the Megatron-LM exports' and importer's one-to-one flags. A new job
// field is a row here and its semantics: what the cost model and the exports do with it.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <nlohmann/json.hpp>

#include "parallax/core/job_spec.hpp"

namespace parallax {

class JsonObjectReader;

enum class JobFieldType : int8_t {
  integer,  // int64_t, in [min, max]
  number,   // double, in [min, max]
  on_off,   // bool: true or false in files
  name,     // a spelling (or a value of its own form), read and written by the row's functions
};

struct JobField {
  const char* key;  // in $.job
  JobFieldType type;
  int64_t JobSpec::*integer = nullptr;  // integer fields
  double JobSpec::*number = nullptr;    // number fields
  bool JobSpec::*on_off = nullptr;      // on_off fields
  // Integer and number fields, and a name field whose flag takes an integer: the rule (every
  // bound used is an integer a double holds exactly).
  double min = 0, max = 0;
  // Integer fields: a file must give it; else its absence means `absent` (number fields too).
  bool required = false;
  double absent = 0;
  // The job's JSON has it at its default too (else only where it differs).
  bool always_written = false;
  // The flag that sets it on the command line (nullptr: none, the file's or the stack's), another
  // spelling of it, its default as typed ("": absent, the file reader's default) and its help.
  const char* flag = nullptr;
  const char* alias = nullptr;
  const char* flag_default = "";
  const char* help = "";
  // The flag's text is an integer in [min, max] (a name field written as a number).
  bool integer_flag = false;
  // The Megatron-LM flag that says the field one to one (an integer's value); nullptr: none, or
  // not one to one (the exporter and importer derive it: the dtype's --bf16, --fp16, --fp8-format).
  const char* megatron_flag = nullptr;
  // name fields: read the key (absent: the field's default) into j, after the rows above it; its
  // JSON value in j (null: left out of the file).
  void (*read)(JsonObjectReader& r, JobSpec& j) = nullptr;
  nlohmann::json (*value)(const JobSpec& j) = nullptr;
};

// Every job field, in the order the job's JSON reader reads them.
std::span<const JobField> job_fields();
// The field at JSON key `key`, or nullptr.
const JobField* job_field(std::string_view key);
// The position of the field at `key` in job_fields(); std::out_of_range for a key no field has.
size_t job_field_index(std::string_view key);
// The field whose Megatron-LM flag is `flag`, or nullptr.
const JobField* job_field_of_megatron_flag(std::string_view flag);

// One field of j from r (the key's absence: the field's default), by the field's rule.
void read_job_field(JsonObjectReader& r, const JobField& f, JobSpec& j);
// One field of j into out, where the job's JSON has it.
void write_job_field(const JobField& f, const JobSpec& j, nlohmann::json& out);

}  // namespace parallax
