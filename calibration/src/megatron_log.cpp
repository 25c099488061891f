// Megatron-LM / Megatron-DeepSpeed training log -> MegatronLog. See megatron_log.hpp.
#include "parallax/calibration/megatron_log.hpp"

#include <cctype>
#include <cmath>
#include <optional>
#include <string_view>
#include <utility>

#include "parallax/core/error.hpp"
#include "text_scan.hpp"

namespace parallax::calib {
namespace {

constexpr std::string_view kElapsedMs = "elapsed time per iteration (ms)";
constexpr std::string_view kElapsedS = "elapsed time per iteration (s)";  // BigScience fork
constexpr std::string_view kThroughputLm = "throughput per GPU (TFLOP/s/GPU)";
constexpr std::string_view kTflopsDs = "TFLOPs";
constexpr std::string_view kSamplesPerS = "samples per second";

// Keys only Megatron-DeepSpeed prints.
bool deepspeed_key(std::string_view key) {
  return key == kTflopsDs || key == kSamplesPerS || key == "consumed tokens" ||
         key == "actual seqlen" || key == "tokens per gpu per second (tgs)" || key == "TGS";
}

struct Head {
  int64_t iteration = 0, train_iters = 0;
  size_t fields_begin = 0;  // just after the '|' that ends "iteration N/M"
};

size_t skip_spaces(std::string_view s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return i;
}

size_t skip_digits(std::string_view s, size_t i) {
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  return i;
}

// Finds "iteration <spaces>N/<spaces>M <spaces>|" anywhere in the line.
std::optional<Head> find_head(std::string_view line) {
  constexpr std::string_view kWord = "iteration";
  for (size_t at = line.find(kWord); at != std::string_view::npos;
       at = line.find(kWord, at + 1)) {
    size_t i = at + kWord.size();
    const size_t n_begin = skip_spaces(line, i);
    if (n_begin == i) continue;  // "iterations", "iteration:"
    const size_t n_end = skip_digits(line, n_begin);
    if (n_end == n_begin || n_end >= line.size() || line[n_end] != '/') continue;
    const size_t m_begin = skip_spaces(line, n_end + 1);
    const size_t m_end = skip_digits(line, m_begin);
    if (m_end == m_begin) continue;
    i = skip_spaces(line, m_end);
    if (i >= line.size() || line[i] != '|') continue;
    const auto n = text_scan::parse_int(line.substr(n_begin, n_end - n_begin));
    const auto m = text_scan::parse_int(line.substr(m_begin, m_end - m_begin));
    if (!n || !m) continue;  // more digits than int64_t holds
    return Head{*n, *m, i + 1};
  }
  return std::nullopt;
}

// "key: value" fields between '|' separators.
std::vector<std::pair<std::string_view, std::string_view>> split_fields(std::string_view s) {
  std::vector<std::pair<std::string_view, std::string_view>> fields;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find('|', start);
    if (end == std::string_view::npos) end = s.size();
    const std::string_view field = s.substr(start, end - start);
    const size_t colon = field.rfind(':');
    if (colon != std::string_view::npos)
      fields.emplace_back(text_scan::trim(field.substr(0, colon)),
                          text_scan::trim(field.substr(colon + 1)));
    start = end + 1;
  }
  return fields;
}

class FieldReader {
 public:
  FieldReader(size_t line_no, const std::string& source) : line_no_(line_no), source_(source) {}

  double number(std::string_view key, std::string_view v, bool positive) const {
    const auto x = text_scan::parse_double(v);
    if (!x || !std::isfinite(*x) || *x < 0 || (positive && *x == 0))
      fail(key, positive ? "must be a finite number > 0" : "must be a finite number >= 0", v);
    return *x;
  }
  double any_number(std::string_view key, std::string_view v) const {  // a loss may diverge
    const auto x = text_scan::parse_double(v);
    if (!x) fail(key, "must be a number", v);
    return *x;
  }
  int64_t whole(std::string_view key, std::string_view v, int64_t min) const {
    const auto x = text_scan::parse_int(v);
    if (!x || *x < min) fail(key, "must be a whole number >= " + std::to_string(min), v);
    return *x;
  }

 private:
  [[noreturn]] void fail(std::string_view key, const std::string& rule, std::string_view v) const {
    throw InputError(source_, text_scan::line_path(line_no_) + ", " + std::string(key),
                     rule + " (got " + text_scan::quoted(v) + ")");
  }

  size_t line_no_;
  const std::string& source_;
};

}  // namespace

MegatronLog parse_megatron_log(const std::string& text, const std::string& source) {
  if (text_scan::is_blank(text)) throw InputError(source, "line 1", "the file is empty");
  MegatronLog log;
  size_t dialect_line = 0;
  const std::vector<std::string_view> lines = text_scan::split_lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::optional<Head> head = find_head(lines[i]);
    if (!head) continue;
    const auto fields = split_fields(lines[i].substr(head->fields_begin));
    bool has_elapsed = false;
    for (const auto& [key, value] : fields) has_elapsed |= key == kElapsedMs || key == kElapsedS;
    if (!has_elapsed) continue;  // a line cut short, or another tool's progress line

    const size_t line_no = i + 1;
    const FieldReader read(line_no, source);
    MegatronIteration it;
    it.iteration = head->iteration;
    it.train_iters = head->train_iters;
    it.line = static_cast<int64_t>(line_no);
    bool deepspeed = false;
    for (const auto& [key, value] : fields) {
      deepspeed |= deepspeed_key(key);
      if (key == kElapsedMs) it.elapsed_ms = read.number(key, value, true);
      else if (key == kElapsedS) it.elapsed_ms = 1000.0 * read.number(key, value, true);
      else if (key == kThroughputLm || key == kTflopsDs) it.tflops_per_gpu = read.number(key, value, false);
      else if (key == kSamplesPerS) it.samples_per_s = read.number(key, value, false);
      else if (key == "global batch size") it.global_batch = read.whole(key, value, 1);
      else if (key == "consumed samples") it.consumed_samples = read.whole(key, value, 0);
      else if (key == "lm loss") it.lm_loss = read.any_number(key, value);
      else if (key == "learning rate") it.learning_rate = read.number(key, value, false);
    }
    const std::string dialect = deepspeed ? "megatron-deepspeed" : "megatron-lm";
    if (log.dialect.empty()) {
      log.dialect = dialect;
      dialect_line = line_no;
    } else if (log.dialect != dialect) {
      throw InputError(source, text_scan::line_path(line_no),
                       "is a " + dialect + " line but line " + std::to_string(dialect_line) +
                           " is " + log.dialect + "; give the log of one run per file");
    }
    log.iterations.push_back(it);
  }
  if (log.iterations.empty())
    throw InputError(source, text_scan::all_lines_path(lines.size()),
                     "no 'iteration N/M | ... elapsed time per iteration (ms)' lines: not a "
                     "Megatron-LM or Megatron-DeepSpeed training log");
  return log;
}

}  // namespace parallax::calib
