// TorchTitan logs (calibration/torchtitan_log.hpp): the step line as TorchTitan v0.2.2's
// MetricsProcessor.log formats it (torchtitan/components/metrics.py), with and without its colour
// escapes, beside the lines it must skip; and the one-line refusals.
#include <catch2/catch.hpp>
#include <string>

#include "parallax/calibration/torchtitan_log.hpp"
#include "parallax/core/error.hpp"

using namespace parallax;
using namespace parallax::calib;

namespace {

// f"{red}step: {step:2}  {green}loss: {loss:8.5f}  {orange}grad_norm: {g:7.4f}  {turquoise}memory:
// {gib:5.2f}GiB({pct:.2f}%)  {blue}tps: {round(tps):,}  {cyan}tflops: {tflops:,.2f}  {magenta}mfu:
// {mfu:.2f}%{reset}", after the logger's prefix.
std::string step_line(int step, const std::string& tps, bool color) {
  const std::string red = color ? "\x1b[31m" : "", blue = color ? "\x1b[34m" : "", reset = color ? "\x1b[39m" : "";
  return "[rank0]:[titan] 2026-12-07 10:00:00,000 - root - INFO - " + red + "step: " + (step < 10 ? " " : "") +
         std::to_string(step) + "  loss:  9.87654  grad_norm:  1.2345  memory: 30.12GiB(38.04%)  " + blue +
         "tps: " + tps + "  tflops: 330.12  mfu: 33.38%" + reset + "\n";
}

}  // namespace

TEST_CASE("a TorchTitan log: every step line's tokens per second per GPU, in order") {
  const std::string text = "[rank0]:[titan] 2026-12-07 09:59:00,000 - root - INFO - Training starts at step 1\n" +
                           step_line(1, "1,234", true) + step_line(2, "7,123", true) +
                           "[rank0]:[titan] validate step:  2  loss:  9.1  tps: 9,999\n" + step_line(3, "7,200", false);
  REQUIRE(looks_like_torchtitan_log(text));
  const TorchTitanLog log = parse_torchtitan_log(text, "titan.log");
  REQUIRE(log.steps.size() == 3);
  CHECK(log.steps[0].step == 1);
  CHECK(log.steps[0].tokens_per_s_per_gpu == 1234);
  CHECK(log.steps[1].tokens_per_s_per_gpu == 7123);
  CHECK(log.steps[2].step == 3);
  CHECK(log.steps[2].tokens_per_s_per_gpu == 7200);
  CHECK(log.steps[2].line == 5);
}

TEST_CASE("a TorchTitan log is refused in one line naming the file and the line") {
  CHECK_FALSE(looks_like_torchtitan_log("iteration 1/10 | elapsed time per iteration (ms): 10 |\n"));
  const auto error_of = [](const std::string& text) {
    try {
      parse_torchtitan_log(text, "titan.log");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(error_of(""), Catch::Contains("titan.log") && Catch::Contains("empty"));
  CHECK_THAT(error_of("hello\nworld\n"), Catch::Contains("no TorchTitan step lines"));
  CHECK_THAT(error_of("step: 1  loss: 2.0\n"), Catch::Contains("line 1") && Catch::Contains("tps"));
  CHECK_THAT(error_of(step_line(1, "0", false)), Catch::Contains("line 1, tps") && Catch::Contains("positive"));
  CHECK_THAT(error_of(step_line(1, "fast", false)), Catch::Contains("line 1, tps"));
}
