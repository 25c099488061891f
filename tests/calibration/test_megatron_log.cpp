// Megatron-LM and Megatron-DeepSpeed training logs. The samples in tests/data are synthetic runs
// whose iteration lines follow training_log() of NVIDIA/Megatron-LM
// (megatron/training/training.py) and microsoft/Megatron-DeepSpeed (megatron/training.py), with
// the usual noise around them (warnings, memory reports, DeepSpeed's step lines). Their numbers
// follow the loggers' definitions, which these tests check from the parsed values alone.
#include <catch2/catch.hpp>

#include <cmath>

#include "calibration_test_util.hpp"
#include "parallax/calibration/megatron_log.hpp"

using namespace parallax;
using namespace parallax::calib;
using parallax::test::read_data;

namespace {

// TFLOP/s per GPU = model FLOPs per iteration / (elapsed * GPUs): the same model and batch in every
// line, so TFLOP/s * elapsed is one constant up to the printed rounding (0.05 or 0.005 TFLOP/s,
// 0.05 ms).
void check_constant_flops(const std::vector<MegatronIteration>& its, size_t from) {
  REQUIRE(its.size() > from + 1);
  const double work = its[from].tflops_per_gpu * its[from].elapsed_ms;
  for (size_t i = from; i < its.size(); ++i) {
    INFO("iteration " << its[i].iteration);
    CHECK(its[i].tflops_per_gpu * its[i].elapsed_ms == Approx(work).epsilon(1e-3));
  }
}

}  // namespace

TEST_CASE("Megatron-LM log: iterations, elapsed time and TFLOP/s per GPU") {
  const std::string text = read_data("megatron-lm-gpt-1.7b-32xa100.log");
  const MegatronLog log = parse_megatron_log(text, "lm.log");
  CHECK(log.dialect == "megatron-lm");
  REQUIRE(log.iterations.size() == 6);
  const std::vector<int64_t> numbers{1, 10, 20, 30, 40, 50};
  for (size_t i = 0; i < numbers.size(); ++i) {
    const MegatronIteration& it = log.iterations[i];
    CHECK(it.iteration == numbers[i]);
    CHECK(it.train_iters == 100000);
    CHECK(it.global_batch == 512);
    CHECK(it.consumed_samples == 512 * it.iteration);
    CHECK(it.learning_rate == Approx(1.5e-4 * static_cast<double>(it.iteration) / 2000));
    CHECK(it.lm_loss > 9);
    CHECK(std::isnan(it.samples_per_s));  // Megatron-LM does not print it
  }
  const MegatronIteration& first = log.iterations[0];  // includes start-up
  CHECK(first.elapsed_ms == 9873.4);
  CHECK(first.tflops_per_gpu == 37.3);
  CHECK(first.line == static_cast<int64_t>(test::line_of(text, "iteration        1/")));
  CHECK(log.iterations[1].elapsed_ms == 2624.6);
  CHECK(log.iterations[1].tflops_per_gpu == 140.3);
  check_constant_flops(log.iterations, 0);
}

TEST_CASE("Megatron-DeepSpeed log: dialect, samples per second and TFLOPs") {
  const MegatronLog log = parse_megatron_log(read_data("megatron-deepspeed-gpt-1.3b-16xa100.log"), "ds.log");
  CHECK(log.dialect == "megatron-deepspeed");
  REQUIRE(log.iterations.size() == 6);
  for (size_t i = 0; i < log.iterations.size(); ++i) {
    const MegatronIteration& it = log.iterations[i];
    CHECK(it.iteration == 10 * static_cast<int64_t>(i + 1));
    CHECK(it.train_iters == 286102);
    CHECK(it.global_batch == 512);
    // samples per second = global batch / elapsed time per iteration
    CHECK(it.samples_per_s * it.elapsed_ms / 1000 == Approx(512).epsilon(1e-4));
  }
  CHECK(log.iterations[0].elapsed_ms == 4530.5);
  CHECK(log.iterations[0].samples_per_s == 113.012);
  CHECK(log.iterations[0].tflops_per_gpu == 129.02);
  CHECK(log.iterations[0].learning_rate == 2.0e-6);
  check_constant_flops(log.iterations, 0);
}

TEST_CASE("Megatron logs: launcher prefixes, seconds, no throughput, a line cut short") {
  // BigScience's Megatron-DeepSpeed under torch.distributed.run --tee: "[default7]:" and seconds.
  const std::string bigscience =
      "[default7]: iteration      310/  115311 | consumed samples:       634880 | consumed tokens:"
      "   1300234240 | elapsed time per iteration (s): 98.41 | learning rate: 1.234E-05 | global "
      "batch size:  2048 | lm loss: 3.012345E+00 | grad norm: 0.301 | num zeros: 0.0 | number of "
      "skipped iterations:   0 | number of nan iterations:   0 | samples per second: 20.811 | "
      "TFLOPs: 142.87 |\n";
  const MegatronLog ds = parse_megatron_log(bigscience, "bloom.log");
  CHECK(ds.dialect == "megatron-deepspeed");
  REQUIRE(ds.iterations.size() == 1);
  CHECK(ds.iterations[0].iteration == 310);
  CHECK(ds.iterations[0].elapsed_ms == Approx(98410));
  CHECK(ds.iterations[0].tflops_per_gpu == 142.87);

  // Megatron-LM without --log-throughput, a srun -l prefix, and a last line cut off by a kill.
  const std::string lm =
      "0:  [2024-06-01 10:00:00] iteration       10/    1000 | consumed samples:          320 | "
      "elapsed time per iteration (ms): 812.4 | learning rate: 3.000000E-05 | global batch size:    "
      "32 | lm loss: 9.876543E+00 | loss scale: 1.0 | grad norm: 4.321 | number of skipped "
      "iterations:   0 | number of nan iterations:   0 |\n"
      "0:  [2024-06-01 10:00:08] iteration       20/    1000 | consumed samples:          640 | ela\n";
  const MegatronLog plain = parse_megatron_log(lm, "lm.log");
  CHECK(plain.dialect == "megatron-lm");
  REQUIRE(plain.iterations.size() == 1);
  CHECK(plain.iterations[0].elapsed_ms == 812.4);
  CHECK(std::isnan(plain.iterations[0].tflops_per_gpu));
}

// ---- bad input: one line naming the file, the line (and field) and the rule ---------------------

namespace {

const std::string kLm = "megatron-lm-gpt-1.7b-32xa100.log";

}  // namespace

TEST_CASE("Megatron bad input: an empty file") {
  for (const std::string text : {"", "\n \n"})
    test::require_input_error([&] { parse_megatron_log(text, "train.log"); }, "line 1",
                              {"train.log", "the file is empty"});
}

TEST_CASE("Megatron bad input: no iteration lines") {
  const std::string text =
      "using world size: 8, data-parallel size: 8, tensor-model-parallel size: 1\n"
      "[before the start of training step] datetime: 2025-03-04 09:15:02.318554 \n"
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n";
  test::require_input_error(
      [&] { parse_megatron_log(text, "oom.log"); }, "lines 1-3",
      {"oom.log", "no 'iteration N/M | ... elapsed time per iteration (ms)' lines"});
  test::require_input_error(
      [&] { parse_megatron_log(read_data("nccl-tests-all-reduce-8xa100.txt"), "nccl.txt"); },
      "lines 1-58", {"no 'iteration N/M"});
}

TEST_CASE("Megatron bad input: a negative, zero or non-finite elapsed time") {
  for (const std::string bad : {"-2624.6", "0.0", "nan", "inf", "2624.6ms"}) {
    const std::string text = test::replace_once(read_data(kLm), "(ms): 2624.6 |", "(ms): " + bad + " |");
    test::require_input_error(
        [&] { parse_megatron_log(text, "lm.log"); },
        "line " + std::to_string(test::line_of(text, "(ms): " + bad)) + ", elapsed time per iteration (ms)",
        {"must be a finite number > 0", "\"" + bad + "\""});
  }
}

TEST_CASE("Megatron bad input: a bad TFLOP/s or batch value") {
  const std::string tflops = test::replace_once(read_data(kLm), "(TFLOP/s/GPU): 140.3", "(TFLOP/s/GPU): -140.3");
  test::require_input_error([&] { parse_megatron_log(tflops, "lm.log"); },
                            "line 7, throughput per GPU (TFLOP/s/GPU)",
                            {"must be a finite number >= 0", "\"-140.3\""});
  const std::string batch = test::replace_once(read_data(kLm), "global batch size:   512", "global batch size:   5x2");
  test::require_input_error([&] { parse_megatron_log(batch, "lm.log"); }, "line 5, global batch size",
                            {"must be a whole number >= 1"});
}

TEST_CASE("Megatron bad input: two dialects in one file") {
  const std::string text =
      read_data(kLm) + read_data("megatron-deepspeed-gpt-1.3b-16xa100.log");
  test::require_input_error([&] { parse_megatron_log(text, "mixed.log"); }, "line 19",
                            {"is a megatron-deepspeed line but line 5 is megatron-lm"});
}
