// nccl-tests stdout -> NcclTestsRun. See nccl_tests.hpp for the accepted format.
#include "parallax/calibration/nccl_tests.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "parallax/core/error.hpp"
#include "text_scan.hpp"

namespace parallax::calib {
namespace {

using text_scan::Word;

enum class Field { size, count, type, redop, root, time, algbw, busbw, wrong, error, timestamp, other };

struct Column {
  std::string name;
  Field field = Field::other;
  bool grouped = false;    // at or after the first time column
  int group = 0;           // 0: first time/algbw/busbw group, 1: second
  size_t begin = 0;        // span of the name in the header line
  size_t end = 0;
  size_t words = 1;        // words a cell takes ("2024-01-01 12:00:00" takes two)
};

struct Header {
  size_t line = 0;
  std::vector<Column> columns;
  bool in_place_first = false;  // the line above the names says "in-place ... out-of-place"
};

Field field_of(std::string_view name) {
  static const std::map<std::string_view, Field> kFields{
      {"size", Field::size},   {"count", Field::count},   {"type", Field::type},
      {"redop", Field::redop}, {"root", Field::root},     {"time", Field::time},
      {"cputime", Field::time}, {"algbw", Field::algbw},  {"busbw", Field::busbw},
      {"#wrong", Field::wrong}, {"error", Field::error},  {"timestamp", Field::timestamp}};
  const auto it = kFields.find(name);
  return it == kFields.end() ? Field::other : it->second;
}

// mpirun --tag-output prefixes every line with "[job,rank]<stdout>:" (Open MPI 4); Open MPI 5's
// --output tag with "[<namespace>@job,rank]<stdout>: " (PRRTE: the job's namespace, a space).
std::string_view strip_mpi_tag(std::string_view line) {
  if (line.empty() || line.front() != '[') return line;
  const size_t close = line.find("]<std");
  if (close == std::string_view::npos || line.substr(1, close - 1).find_first_of("[] \t") !=
                                             std::string_view::npos)
    return line;
  const size_t colon = line.find(">:", close);
  return colon == std::string_view::npos ? line : line.substr(colon + 2);
}

bool is_comment(std::string_view line) {
  const std::string_view t = text_scan::trim(line);
  return !t.empty() && t.front() == '#';
}

bool has_word(const std::vector<Word>& words, std::string_view w) {
  for (const Word& x : words)
    if (x.text == w) return true;
  return false;
}

// "all_reduce_perf", "./build/all_reduce_perf_mpi" -> "all_reduce"; "" for other words.
std::string collective_of_binary(std::string_view word, bool any_name) {
  const size_t slash = word.rfind('/');
  if (slash != std::string_view::npos) word.remove_prefix(slash + 1);
  if (word.ends_with("_mpi")) word.remove_suffix(4);
  if (!word.ends_with("_perf")) return "";
  word.remove_suffix(5);
  static const std::set<std::string_view> kKnown{"all_reduce", "all_gather", "reduce_scatter",
                                                 "broadcast",  "reduce",     "alltoall",
                                                 "gather",     "scatter",    "sendrecv",
                                                 "hypercube"};
  if (word.empty() || (!any_name && kKnown.count(word) == 0)) return "";
  return word == "sendrecv" ? "send_recv" : std::string(word);
}

Header read_header(std::string_view line, size_t line_no, bool in_place_first,
                   const std::string& source) {
  Header h;
  h.line = line_no;
  h.in_place_first = in_place_first;
  int times = 0;
  const std::vector<Word> words = text_scan::split_words(line);
  for (size_t i = 1; i < words.size(); ++i) {  // words[0] is "#"
    Column c;
    c.name = std::string(words[i].text);
    c.field = field_of(words[i].text);
    c.begin = words[i].pos;
    c.end = words[i].pos + words[i].text.size();
    c.words = c.field == Field::timestamp ? 2 : 1;
    if (c.field == Field::time) ++times;
    c.grouped = times > 0;
    c.group = times > 0 ? times - 1 : 0;
    h.columns.push_back(c);
  }
  const std::string where = text_scan::line_path(line_no);
  if (times > 2)
    throw InputError(source, where,
                     "the column header names " + std::to_string(times) +
                         " time columns; expected out-of-place and in-place groups at most");
  auto has = [&](Field f, int group) {
    for (const Column& c : h.columns)
      if (c.field == f && (c.group == group || f == Field::size)) return true;
    return false;
  };
  if (!has(Field::size, 0)) throw InputError(source, where, "the column header has no size column");
  for (int g = 0; g < std::max(times, 1); ++g)
    for (const auto& [f, name] : {std::pair{Field::time, "time"}, std::pair{Field::algbw, "algbw"},
                                  std::pair{Field::busbw, "busbw"}})
      if (!has(f, g))
        throw InputError(source, where,
                         std::string("the column header has no ") + name + " column in its " +
                             (g == 0 ? "first" : "second") + " time/algbw/busbw group");
  return h;
}

// Cells of a data row by column; nullopt = blank. Throws on a field count that cannot be matched.
std::vector<std::optional<std::string>> row_cells(std::string_view line, size_t line_no,
                                                  const Header& h, const std::string& source) {
  const std::vector<Word> words = text_scan::split_words(line);
  size_t expected = 0;
  for (const Column& c : h.columns) expected += c.words;
  std::vector<bool> present(h.columns.size(), true);
  bool matched = words.size() == expected;
  if (words.size() < expected) {
    // Cells left blank (a collective with no reduction operator, a group not measured) are the
    // columns whose header span holds only spaces in this row: values are right-aligned under
    // their names. Only a descriptive cell or a whole time/algbw/busbw group may be blank.
    size_t kept = 0;
    bool blanks_allowed = true;
    std::map<int, std::set<bool>> group_present;
    for (size_t i = 0; i < h.columns.size(); ++i) {
      const Column& c = h.columns[i];
      const std::string_view under =
          c.begin < line.size() ? line.substr(c.begin, c.end - c.begin) : std::string_view();
      present[i] = !text_scan::is_blank(under);
      if (present[i]) kept += c.words;
      if (c.grouped) group_present[c.group].insert(present[i]);
      if (!present[i] && (c.field == Field::size || c.field == Field::count)) blanks_allowed = false;
    }
    for (const auto& [group, seen] : group_present)
      if (seen.size() > 1) blanks_allowed = false;  // part of a group blank: fields are missing
    matched = blanks_allowed && kept == words.size();
  }
  if (!matched)
    throw InputError(source, text_scan::line_path(line_no),
                     "has " + std::to_string(words.size()) + " fields; the column header at line " +
                         std::to_string(h.line) + " names " + std::to_string(expected));
  std::vector<std::optional<std::string>> cells(h.columns.size());
  size_t w = 0;
  for (size_t i = 0; i < h.columns.size(); ++i) {
    if (!present[i]) continue;
    std::string cell(words[w].text);
    for (size_t k = 1; k < h.columns[i].words; ++k) cell.append(" ").append(words[w + k].text);
    w += h.columns[i].words;
    cells[i] = cell;
  }
  return cells;
}

class RowReader {
 public:
  RowReader(const Header& h, size_t line_no, const std::string& source)
      : h_(h), line_no_(line_no), source_(source) {}

  NcclTestsRow read(const std::vector<std::optional<std::string>>& cells) const {
    NcclTestsRow r;
    r.line = static_cast<int64_t>(line_no_);
    for (size_t i = 0; i < cells.size(); ++i) {
      if (!cells[i]) continue;
      const Column& c = h_.columns[i];
      const std::string& v = *cells[i];
      const bool oop = (c.group == 0) != h_.in_place_first;
      switch (c.field) {
        case Field::size: r.size_bytes = static_cast<double>(whole(c, v, 0)); break;
        case Field::count: r.count = whole(c, v, 0); break;
        case Field::type: r.type = v; break;
        case Field::redop: r.redop = v; break;
        case Field::root: r.root = whole(c, v, -1); break;
        case Field::time: (oop ? r.oop_time_us : r.ip_time_us) = measure(c, v); break;
        case Field::algbw: (oop ? r.oop_algbw_gbps : r.ip_algbw_gbps) = measure(c, v); break;
        case Field::busbw: (oop ? r.oop_busbw_gbps : r.ip_busbw_gbps) = measure(c, v); break;
        case Field::wrong: (oop ? r.oop_wrong : r.ip_wrong) = wrong(c, v); break;
        case Field::error: (oop ? r.oop_error : r.ip_error) = max_error(c, v); break;
        case Field::timestamp:
        case Field::other: break;
      }
    }
    return r;
  }

 private:
  std::string where(const Column& c) const {
    std::string s = text_scan::line_path(line_no_) + ", ";
    const bool grouped = c.field == Field::time || c.field == Field::algbw ||
                         c.field == Field::busbw || c.field == Field::wrong ||
                         c.field == Field::error;
    if (grouped) s += ((c.group == 0) != h_.in_place_first) ? "out-of-place " : "in-place ";
    return s + c.name;
  }
  [[noreturn]] void fail(const Column& c, const std::string& rule, const std::string& v) const {
    throw InputError(source_, where(c), rule + " (got " + text_scan::quoted(v) + ")");
  }
  int64_t whole(const Column& c, const std::string& v, int64_t min) const {
    const auto x = text_scan::parse_int(v);
    if (!x || *x < min) fail(c, "must be a whole number >= " + std::to_string(min), v);
    return *x;
  }
  // Time (us) or bandwidth (GB/s): "N/A" is not measured; anything else finite and >= 0.
  double measure(const Column& c, const std::string& v) const {
    if (v == "N/A") return NcclTestsRow::kNaN;
    const auto x = text_scan::parse_double(v);
    if (!x || !std::isfinite(*x) || *x < 0) fail(c, "must be a finite number >= 0", v);
    return *x;
  }
  // "%6g" of a count of wrong elements; "N/A" without validation. At most 2^53 (doubles count
  // exactly that far; a larger one would not fit the int64 either: found by fuzz_nccl_tests).
  int64_t wrong(const Column& c, const std::string& v) const {
    if (v == "N/A") return -1;
    const auto x = text_scan::parse_double(v);
    if (!x || !std::isfinite(*x) || *x < 0 || *x > 9007199254740992.0 || std::floor(*x) != *x)
      fail(c, "must be a whole number from 0 to 2^53 or N/A", v);
    return static_cast<int64_t>(*x);
  }
  // Older versions: "%5.0le" of the max error, "*" appended when it is out of bounds.
  double max_error(const Column& c, const std::string& v) const {
    if (v == "N/A") return NcclTestsRow::kNaN;
    std::string_view s = v;
    if (s.ends_with('*')) s.remove_suffix(1);
    const auto x = text_scan::parse_double(s);
    if (!x || !std::isfinite(*x) || *x < 0) fail(c, "must be a finite number >= 0 or N/A", v);
    return *x;
  }

  const Header& h_;
  size_t line_no_;
  const std::string& source_;
};

// "#  Rank  3 Group  0 Pid  1234 on   host-a device  3 [0x4e] NVIDIA A100-SXM4-80GB" (2.13+);
// older versions have no "Group"; 2.15+ print the bus id as [0000:4e:00].
struct RankLine {
  int64_t rank = -1;
  std::string host, device;
};

std::optional<RankLine> read_rank_line(std::string_view line, const std::vector<Word>& words) {
  if (words.size() < 3 || words[0].text != "#" || words[1].text != "Rank") return std::nullopt;
  const auto rank = text_scan::parse_int(words[2].text);
  if (!rank) return std::nullopt;
  RankLine r;
  r.rank = *rank;
  for (size_t i = 3; i + 1 < words.size(); ++i) {
    if (words[i].text == "on" && r.host.empty()) r.host = std::string(words[i + 1].text);
    if (words[i].text == "device" && i + 2 < words.size() && words[i + 2].text.starts_with('[')) {
      const size_t close = line.find(']', words[i + 2].pos);
      if (close != std::string_view::npos)
        r.device = std::string(text_scan::trim(line.substr(close + 1)));
      break;
    }
  }
  return r;
}

// "# nThread 1 nGpus 8 minBytes 8 ...": the GPUs one process drives.
void read_gpus_per_process(std::string_view body, NcclTestsRun& run) {
  const std::vector<Word> w = text_scan::split_words(body);
  if (w.size() >= 4 && w[2].text == "nGpus") {
    const auto threads = text_scan::parse_int(w[1].text);
    const auto gpus = text_scan::parse_int(w[3].text);
    if (threads && gpus && *threads > 0 && *gpus > 0) run.gpus_per_process = *threads * *gpus;
  }
}

// "# Avg bus bandwidth    : 123.4".
void read_avg_busbw(std::string_view body, NcclTestsRun& run) {
  const size_t colon = body.find(':');
  const std::vector<Word> value =
      text_scan::split_words(colon == std::string_view::npos ? "" : body.substr(colon + 1));
  if (!value.empty()) {
    const auto x = text_scan::parse_double(value[0].text);
    if (x && std::isfinite(*x)) run.avg_busbw_gbps = *x;
  }
}

// A file with no column header, or no rows under it, is not nccl-tests output.
void require_rows(const NcclTestsRun& run, const std::optional<Header>& header, size_t lines,
                  const std::string& source) {
  if (!header)
    throw InputError(source, text_scan::all_lines_path(lines),
                     "no column header row (a \"#\" line naming size, count, type, ..., time, "
                     "algbw, busbw) found: not nccl-tests output");
  if (run.rows.empty())
    throw InputError(source, text_scan::line_path(header->line),
                     "no data rows follow the column header");
}

}  // namespace

NcclTestsRun parse_nccl_tests(const std::string& text, const std::string& source) {
  if (text_scan::is_blank(text)) throw InputError(source, "line 1", "the file is empty");
  NcclTestsRun run;
  std::optional<Header> header;
  bool in_place_first = false;                  // from the latest "out-of-place in-place" line
  size_t started_line = 0;                      // "# Collective test starting" line
  std::map<int64_t, size_t> rank_lines;         // rank -> line
  std::set<std::string> hosts;
  const std::vector<std::string_view> lines = text_scan::split_lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t line_no = i + 1;
    const std::string_view line = strip_mpi_tag(lines[i]);
    const std::vector<Word> words = text_scan::split_words(line);
    if (words.empty()) continue;
    if (!is_comment(line)) {
      const bool data = !words[0].text.empty() && words[0].text.front() != '-' &&
                        words[0].text.front() != '+' && text_scan::parse_int(words[0].text);
      if (data && header) {
        RowReader reader(*header, line_no, source);
        run.rows.push_back(reader.read(row_cells(line, line_no, *header, source)));
      } else if (!header && run.collective.empty()) {
        for (const Word& w : words) {  // a command line pasted above the output
          run.collective = collective_of_binary(w.text, false);
          if (!run.collective.empty()) break;
        }
      }
      continue;
    }
    const std::string_view body = text_scan::trim(text_scan::trim(line).substr(1));
    if (body.starts_with("Collective test starting:")) {
      if (started_line != 0 || !run.rows.empty())
        throw InputError(source, text_scan::line_path(line_no),
                         "a second test starts here (the first at line " +
                             std::to_string(started_line ? started_line : header->line) +
                             "); give the output of one *_perf run per file");
      started_line = line_no;
      const std::string_view name = text_scan::trim(body.substr(body.find(':') + 1));
      run.collective = collective_of_binary(name, true);
      if (run.collective.empty()) run.collective = std::string(name);
    } else if (body.starts_with("nThread ")) {
      read_gpus_per_process(body, run);
    } else if (body.starts_with("nccl-tests version") && words.size() > 3) {
      run.version = std::string(words[3].text);
    } else if (body.starts_with("Avg bus bandwidth")) {
      read_avg_busbw(body, run);
    } else if (const auto rank = read_rank_line(line, words)) {
      const auto [it, fresh] = rank_lines.emplace(rank->rank, line_no);
      if (!fresh)
        throw InputError(source, text_scan::line_path(line_no),
                         "rank " + std::to_string(rank->rank) + " is listed again (first at line " +
                             std::to_string(it->second) +
                             "): each process ran alone; build nccl-tests with MPI=1");
      run.devices.push_back(rank->device);
      run.hosts.push_back(rank->host);
      if (!rank->host.empty()) hosts.insert(rank->host);
    } else if (has_word(words, "out-of-place") || has_word(words, "in-place")) {
      const size_t oop = line.find("out-of-place");
      const size_t ip = line.find("in-place");
      in_place_first = ip != std::string_view::npos &&
                       (oop == std::string_view::npos || ip < oop);
    } else if (words.size() > 1 && words[1].text == "size" && has_word(words, "busbw")) {
      if (!run.rows.empty())
        throw InputError(source, text_scan::line_path(line_no),
                         "a second column header (the first at line " +
                             std::to_string(header->line) +
                             "); give the output of one *_perf run per file");
      header = read_header(line, line_no, in_place_first, source);
      for (const Column& c : header->columns) {
        run.redop_column = run.redop_column || c.field == Field::redop;
        run.root_column = run.root_column || c.field == Field::root;
      }
    }
  }
  require_rows(run, header, lines.size(), source);
  run.ranks = static_cast<int64_t>(rank_lines.size());
  run.nodes = static_cast<int64_t>(hosts.size());
  return run;
}

}  // namespace parallax::calib
