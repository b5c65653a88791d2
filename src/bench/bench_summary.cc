// Per-level aggregation (fast_p, geomean speedups) and the markdown / plain-text tables; see
// bench_summary.h.
#include "bench/bench_summary.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

namespace stitch::bench {
namespace {

constexpr std::array<std::string_view, 3> kStandardModes = {"eager", "compile", "reduce-overhead"};

// Standard modes first in their fixed order, then the rest alphabetically.
std::vector<std::string> order_modes(const std::set<std::string>& present, bool all_standard) {
  std::vector<std::string> modes;
  for (std::string_view mode : kStandardModes)
    if (all_standard || present.count(std::string(mode))) modes.emplace_back(mode);
  for (const auto& mode : present)
    if (std::find(kStandardModes.begin(), kStandardModes.end(), mode) == kStandardModes.end())
      modes.push_back(mode);
  return modes;
}

std::set<std::string> modes_in(const std::vector<BenchRecord>& records) {
  std::set<std::string> present;
  for (const auto& record : records)
    for (const auto& baseline : record.baselines)
      present.insert(baseline.mode);
  return present;
}

// "level2" < "level10": runs of digits compare as numbers.
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) &&
        std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i_end = a.find_first_not_of("0123456789", i),
             j_end = b.find_first_not_of("0123456789", j);
      std::string_view x = std::string_view(a).substr(i, i_end - i);
      std::string_view y = std::string_view(b).substr(j, j_end - j);
      x.remove_prefix(std::min(x.find_first_not_of('0'), x.size()));
      y.remove_prefix(std::min(y.find_first_not_of('0'), y.size()));
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = std::min(i_end, a.size());
      j = std::min(j_end, b.size());
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i, ++j;
    }
  }
  if (a.size() - i != b.size() - j) return a.size() - i < b.size() - j;
  return a < b;  // equal as numbers ("level02", "level2"): still two levels
}

LevelSummary summarize(const std::string& level, const std::vector<const BenchRecord*>& records,
                       const std::vector<std::string>& modes) {
  LevelSummary summary;
  summary.level = level;
  summary.tasks = static_cast<int>(records.size());
  for (const BenchRecord* r : records)
    summary.passed += r->passed() ? 1 : 0;
  for (const auto& mode : modes) {
    ModeSummary m;
    m.mode = mode;
    std::array<int, kFastPThresholds.size()> fast{};
    double log_sum = 0;
    for (const BenchRecord* r : records) {
      if (r->baseline_ms(mode)) ++m.tasks_with_baseline;
      if (r->passed()) ++fast[0];  // fast_0 is "correct", whether or not a baseline was timed
      std::optional<double> speedup = r->speedup(mode);
      if (!speedup) continue;
      for (size_t p = 1; p < kFastPThresholds.size(); ++p)
        if (*speedup > kFastPThresholds[p]) ++fast[p];
      log_sum += std::log(*speedup);
      ++m.geomean_count;
    }
    for (size_t p = 0; p < fast.size(); ++p)
      m.fast_p[p] = summary.tasks > 0 ? static_cast<double>(fast[p]) / summary.tasks : 0;
    if (m.geomean_count > 0) m.geomean_speedup = std::exp(log_sum / m.geomean_count);
    summary.modes.push_back(std::move(m));
  }
  return summary;
}

// Distinct non-empty values of one field, first appearance first.
template <typename Get>
std::vector<std::string> distinct(const std::vector<BenchRecord>& records, Get get) {
  std::vector<std::string> values;
  for (const auto& record : records) {
    const std::string& value = get(record);
    if (!value.empty() && std::find(values.begin(), values.end(), value) == values.end())
      values.push_back(value);
  }
  return values;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i)
    out += (i ? std::string(separator) : "") + parts[i];
  return out;
}

std::string threshold_name(double p) {
  return fmt::format("fast_{:g}", p);
}

// Table cells shared by both formats: a header and rows of strings.
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

Table task_table(const std::vector<BenchRecord>& records, const std::vector<std::string>& modes,
                 bool with_baseline_ms) {
  Table table;
  table.header = {"task", "level", "outcome", "ours ms"};
  if (with_baseline_ms)
    for (const auto& mode : modes)
      table.header.push_back(mode + " ms");
  for (const auto& mode : modes)
    table.header.push_back("vs " + mode);
  table.header.push_back("% of floor");
  table.header.push_back("attempts");
  for (const auto& r : records) {
    std::vector<std::string> row = {r.task, r.level, std::string(bench_outcome_name(r.outcome)),
                                    format_ms(r.ours_ms)};
    if (with_baseline_ms)
      for (const auto& mode : modes)
        row.push_back(format_ms(r.baseline_ms(mode)));
    for (const auto& mode : modes)
      row.push_back(format_speedup(r.speedup(mode)));
    row.push_back(format_percent(r.floor_fraction()));
    row.push_back(std::to_string(r.attempts));
    table.rows.push_back(std::move(row));
  }
  return table;
}

Table summary_table(const std::vector<BenchRecord>& records) {
  Table table;
  table.header = {"level", "baseline", "tasks", "correct"};
  for (double p : kFastPThresholds)
    table.header.push_back(threshold_name(p));
  table.header.push_back("geomean speedup (n)");
  for (const auto& level : summarize_levels(records)) {
    std::string correct = fmt::format("{}/{}", level.passed, level.tasks);
    if (level.modes.empty()) {
      std::vector<std::string> row = {level.level, kMissing, std::to_string(level.tasks), correct,
                                      format_percent(level.correct_fraction())};
      for (size_t p = 1; p < kFastPThresholds.size(); ++p)
        row.push_back(kMissing);
      row.push_back(kMissing);
      table.rows.push_back(std::move(row));
    }
    for (const auto& m : level.modes) {
      std::vector<std::string> row = {level.level, m.mode, std::to_string(level.tasks), correct};
      for (size_t p = 0; p < kFastPThresholds.size(); ++p)
        row.push_back(p == 0 || m.tasks_with_baseline > 0 ? format_percent(m.fast_p[p]) : kMissing);
      row.push_back(m.geomean_speedup
                        ? fmt::format("{} ({})", format_speedup(m.geomean_speedup), m.geomean_count)
                        : std::string(kMissing));
      table.rows.push_back(std::move(row));
    }
  }
  return table;
}

// '|' would end the cell and '<' start an HTML tag in a renderer; a backslash escapes either.
std::string markdown_cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|' || c == '<')
      out += '\\', out += c;
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string render_markdown(const Table& table) {
  std::string out = "|";
  for (const auto& cell : table.header)
    out += " " + markdown_cell(cell) + " |";
  out += "\n|";
  for (size_t i = 0; i < table.header.size(); ++i)
    out += i < 3 ? " --- |" : " ---: |";
  out += "\n";
  for (const auto& row : table.rows) {
    out += "|";
    for (const auto& cell : row)
      out += " " + markdown_cell(cell) + " |";
    out += "\n";
  }
  return out;
}

// Columns as wide as their widest cell, counted in code points ("—" and "×" are one column).
size_t display_width(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::string render_text(const Table& table, size_t left_aligned) {
  std::vector<size_t> widths(table.header.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i)
      widths[i] = std::max(widths[i], display_width(row[i]));
  };
  measure(table.header);
  for (const auto& row : table.rows)
    measure(row);
  auto line = [&](const std::vector<std::string>& row) {
    std::string out;
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      std::string pad(widths[i] - display_width(row[i]), ' ');
      std::string cell = i < left_aligned ? row[i] + pad : pad + row[i];
      out += (i ? "  " : "") + cell;
    }
    while (!out.empty() && out.back() == ' ')
      out.pop_back();
    return out + "\n";
  };
  std::string out = line(table.header);
  for (const auto& row : table.rows)
    out += line(row);
  return out;
}

std::string header_line(const std::vector<BenchRecord>& records) {
  std::vector<std::string> tracks = tracks_present(records), gpus = gpus_present(records);
  int passed = static_cast<int>(std::count_if(records.begin(), records.end(),
                                              [](const BenchRecord& r) { return r.passed(); }));
  std::string line =
      fmt::format("Track{}: {}. GPU{}: {}. {} tasks, {} passed.", tracks.size() > 1 ? "s" : "",
                  tracks.empty() ? kMissing : join(tracks, ", "), gpus.size() > 1 ? "s" : "",
                  gpus.empty() ? kMissing : join(gpus, ", "), records.size(), passed);
  if (tracks.size() > 1) line += " Mixed tracks: speedups are not comparable across them.";
  return line;
}

}  // namespace

std::vector<std::string> baseline_modes(const std::vector<BenchRecord>& records) {
  return order_modes(modes_in(records), false);
}

std::vector<std::string> table_modes(const std::vector<BenchRecord>& records) {
  return order_modes(modes_in(records), true);
}

std::vector<LevelSummary> summarize_levels(const std::vector<BenchRecord>& records) {
  std::vector<std::string> modes = baseline_modes(records);
  std::map<std::string, std::vector<const BenchRecord*>, decltype(&natural_less)> by_level(
      natural_less);
  std::vector<const BenchRecord*> all;
  for (const auto& record : records) {
    by_level[record.level].push_back(&record);
    all.push_back(&record);
  }
  std::vector<LevelSummary> summaries;
  for (const auto& [level, level_records] : by_level)
    summaries.push_back(summarize(level, level_records, modes));
  summaries.push_back(summarize(kAllLevels, all, modes));
  return summaries;
}

std::vector<std::string> tracks_present(const std::vector<BenchRecord>& records) {
  return distinct(records, [](const BenchRecord& r) -> const std::string& { return r.track; });
}

std::vector<std::string> gpus_present(const std::vector<BenchRecord>& records) {
  return distinct(records, [](const BenchRecord& r) -> const std::string& { return r.gpu; });
}

std::string format_ms(std::optional<double> ms) {
  return ms && std::isfinite(*ms) ? fmt::format("{:.3f}", *ms) : kMissing;
}

std::string format_speedup(std::optional<double> speedup) {
  return speedup && std::isfinite(*speedup) ? fmt::format("{:.2f}×", *speedup) : kMissing;
}

std::string format_percent(double fraction) {
  return fmt::format("{:.1f}%", fraction * 100);
}

std::string format_percent(std::optional<double> fraction) {
  return fraction && std::isfinite(*fraction) ? format_percent(*fraction) : kMissing;
}

std::string format_seconds(double seconds) {
  return fmt::format("{:.1f}", seconds);
}

std::string format_table_markdown(const std::vector<BenchRecord>& records) {
  std::string out = header_line(records) + "\n\n";
  out += render_markdown(task_table(records, table_modes(records), true));
  out +=
      "\nSummary per level. fast_p: fraction of all tasks that are correct and faster than p× "
      "the baseline (fast_0 = correct); geomean over the passed tasks with that baseline (n of "
      "them).\n\n";
  out += render_markdown(summary_table(records));
  bool any_failed = false;
  for (const auto& r : records) {
    if (r.passed()) continue;
    if (!any_failed) out += "\nNot passed:\n\n";
    any_failed = true;
    out += fmt::format("- {}: {}{}\n", markdown_cell(r.key()), bench_outcome_name(r.outcome),
                       r.reason.empty() ? "" : " — " + markdown_cell(r.reason));
  }
  return out;
}

std::string format_table_text(const std::vector<BenchRecord>& records) {
  std::string out = header_line(records) + "\n\n";
  out += render_text(task_table(records, baseline_modes(records), false), 3);
  out += "\n";
  out += render_text(summary_table(records), 2);
  return out;
}

}  // namespace stitch::bench
