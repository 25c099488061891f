#pragma once
// One error type for every bad input: it names where (file), what (JSON path or CLI flag) and
// the rule that was broken. The CLI prints it as one line and exits with code 2.
#include <stdexcept>
#include <string>

namespace parallax {

class InputError : public std::runtime_error {
 public:
  // source: file name, preset name ("preset model/gpt3-175b") or "command line".
  // path: JSON path such as "$.plan.tp" or a flag such as "--tp".
  // rule: what must hold, with the offending value, e.g. "must be >= 1 (got 0)".
  InputError(std::string source, std::string path, std::string rule);

  const std::string& source() const { return source_; }
  const std::string& path() const { return path_; }
  const std::string& rule() const { return rule_; }

 private:
  std::string source_;
  std::string path_;
  std::string rule_;
};

// Exit code of the CLI for any InputError.
inline constexpr int kExitBadInput = 2;

// A run that started and could not go on (the loss became NaN or infinite, a checkpoint could not
// be written): the CLI prints it on one line and exits kExitRunFailed. MPI ranks throw it together
// (the condition is agreed over the world first), so none is left waiting.
class RunFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
inline constexpr int kExitRunFailed = 3;

}  // namespace parallax
