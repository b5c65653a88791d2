// The HTML page of a bench report: header, tables, the charts of html_charts.cc and the JSON data
// island; see html_report.h.
#include "bench/html_report.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "bench/bench_summary.h"
#include "bench/html_charts.h"

namespace stitch::bench {
namespace {

constexpr const char* kStyle = R"css(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328;
       margin: 24px auto; max-width: 1200px; padding: 0 16px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 32px 0 8px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
h3 { font-size: 14px; margin: 20px 0 4px; }
.meta { color: #59636e; margin: 0; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.num { text-align: right; white-space: nowrap; }
td.reason { max-width: 360px; color: #59636e; font-size: 12px; }
.outcome-passed td.outcome { color: #1a7f37; font-weight: 600; }
tr:not(.outcome-passed) td.outcome { color: #cf222e; font-weight: 600; }
tr.insecure-sandbox td { background: #fff1e5; }
tr.insecure-sandbox td.reason { color: #bc4c00; font-weight: 600; }
.chart { display: block; max-width: 100%; height: auto; }
.chart text { font: 12px system-ui, sans-serif; fill: #1f2328; }
.chart .tick, .chart .task-gap { fill: #59636e; }
.chart .task-gap { font-style: italic; }
.chart .segment-value { fill: #fff; font-size: 11px; }
.chart .grid { stroke: #eaeef2; stroke-width: 1; }
.chart .reference-line { stroke: #1f2328; stroke-width: 1.5; stroke-dasharray: 4 3; }
.kernel-legend td { border: none; padding: 1px 6px; }
.kernel-legend .kernel-name { font-family: ui-monospace, monospace; font-size: 12px; word-break: break-all; }
.scroll { overflow-x: auto; }
.swatch { display: inline-block; width: 12px; height: 12px; vertical-align: middle; }
)css";

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i)
    out += (i ? std::string(separator) : "") + parts[i];
  return out;
}

std::string cell(const std::string& text, const char* cls = nullptr) {
  return cls ? fmt::format("<td class=\"{}\">{}</td>", cls, html_escape(text))
             : fmt::format("<td>{}</td>", html_escape(text));
}

std::string header_row(const std::vector<std::string>& names) {
  std::string out = "<tr>";
  for (const auto& name : names)
    out += "<th>" + html_escape(name) + "</th>";
  return out + "</tr>\n";
}

std::string render_header(const std::vector<BenchRecord>& records,
                          const HtmlReportOptions& options) {
  std::vector<std::string> gpus = gpus_present(records), tracks = tracks_present(records);
  std::array<int, kBenchOutcomeNames.size()> by_outcome{};
  for (const auto& r : records)
    ++by_outcome[static_cast<size_t>(r.outcome)];
  std::vector<std::string> counts = {fmt::format("{} tasks", records.size())};
  for (size_t i = 0; i < by_outcome.size(); ++i)
    if (by_outcome[i] > 0)
      counts.push_back(fmt::format("{} {}", by_outcome[i], kBenchOutcomeNames[i]));

  std::string out = "<header>\n<h1>" + html_escape(options.title) + "</h1>\n<p class=\"meta\">";
  out += fmt::format("GPU{}: {} · Track{}: {}", gpus.size() > 1 ? "s" : "",
                     html_escape(gpus.empty() ? kMissing : join(gpus, ", ")),
                     tracks.size() > 1 ? "s" : "",
                     html_escape(tracks.empty() ? kMissing : join(tracks, ", ")));
  if (!options.generated_at.empty()) out += " · Generated " + html_escape(options.generated_at);
  out += "</p>\n<p class=\"meta\" id=\"counts\">" + html_escape(join(counts, " · ")) + "</p>\n";
  if (tracks.size() > 1)
    out +=
        "<p class=\"meta\"><strong>Mixed tracks: speedups are not comparable across them."
        "</strong></p>\n";
  return out + "</header>\n";
}

std::string render_summary(const std::vector<BenchRecord>& records) {
  std::vector<std::string> names = {"level", "baseline", "tasks", "correct"};
  for (double p : kFastPThresholds)
    names.push_back(fmt::format("fast_{:g}", p));
  names.push_back("geomean speedup");
  names.push_back("n");
  std::string out =
      "<h2>Summary</h2>\n<p class=\"meta\">fast_p: fraction of all tasks of the level that are "
      "correct and faster than p× the baseline (fast_0 = correct). Geomean over the passed tasks "
      "with that baseline (n of them).</p>\n<table id=\"summary-table\" class=\"summary\">\n" +
      header_row(names);
  for (const auto& level : summarize_levels(records)) {
    auto row_start = [&](const std::string& mode) {
      return "<tr>" + cell(level.level) + cell(mode) +
             fmt::format("<td class=\"num\">{}</td><td class=\"num\">{}/{}</td>", level.tasks,
                         level.passed, level.tasks);
    };
    if (level.modes.empty()) {  // no baselines at all: correctness only
      out += row_start(kMissing) + cell(format_percent(level.correct_fraction()), "num");
      for (size_t p = 1; p < kFastPThresholds.size() + 2; ++p)
        out += cell(kMissing, "num");
      out += "</tr>\n";
    }
    for (const auto& m : level.modes) {
      out += row_start(m.mode);
      for (size_t p = 0; p < kFastPThresholds.size(); ++p)
        out += cell(p == 0 || m.tasks_with_baseline > 0 ? format_percent(m.fast_p[p]) : kMissing,
                    "num");
      out += cell(format_speedup(m.geomean_speedup), "num");
      out += fmt::format("<td class=\"num\">{}</td></tr>\n", m.geomean_count);
    }
  }
  return out + "</table>\n";
}

std::string render_task_table(const std::vector<BenchRecord>& records) {
  std::vector<std::string> modes = table_modes(records);
  bool many_gpus = gpus_present(records).size() > 1,
       many_tracks = tracks_present(records).size() > 1;
  std::vector<std::string> names = {"task",    "level",  "outcome", "reason",
                                    "ours ms", "p10 ms", "p90 ms"};
  for (const auto& mode : modes)
    names.push_back(mode + " ms");
  for (const auto& mode : modes)
    names.push_back("vs " + mode);
  for (const char* name : {"% of floor", "attempts", "wall s", "before refine ms", "finished"})
    names.push_back(name);
  if (many_tracks) names.push_back("track");
  if (many_gpus) names.push_back("GPU");

  std::string out =
      "<h2>Tasks</h2>\n<div class=\"scroll\">\n<table id=\"task-table\" class=\"tasks\">\n" +
      header_row(names);
  for (const auto& r : records) {
    const std::string outcome(bench_outcome_name(r.outcome));
    // A pass without every sandbox layer (--insecure-sandbox) is marked, never silent.
    std::string insecure = r.insecure_sandbox.empty()
                               ? ""
                               : fmt::format("INSECURE SANDBOX: ran without {}",
                                             fmt::join(r.insecure_sandbox, ", "));
    out += fmt::format("<tr class=\"outcome-{}{}\" data-key=\"{}\">", outcome,
                       insecure.empty() ? "" : " insecure-sandbox", html_escape(r.key()));
    out += fmt::format("<td title=\"{}\">{}</td>", html_escape(r.task_file), html_escape(r.task));
    out += cell(r.level) + cell(outcome, "outcome") +
           cell(insecure.empty() ? r.reason : insecure + (r.reason.empty() ? "" : "; " + r.reason),
                "reason");
    for (const auto& ms : {r.ours_ms, r.ours_p10_ms, r.ours_p90_ms})
      out += cell(format_ms(ms), "num");
    for (const auto& mode : modes)
      out += cell(format_ms(r.baseline_ms(mode)), "num");
    for (const auto& mode : modes)
      out += cell(format_speedup(r.speedup(mode)), "num");
    out += cell(format_percent(r.floor_fraction()), "num");
    out += cell(std::to_string(r.attempts), "num") + cell(format_seconds(r.wall_s), "num") +
           cell(format_ms(r.refine_before_ms), "num") + cell(r.finished_at);
    if (many_tracks) out += cell(r.track);
    if (many_gpus) out += cell(r.gpu);
    out += "</tr>\n";
  }
  return out + "</table>\n</div>\n";
}

// The records as JSON that no text inside can break out of: '<', '>' and '&' only occur inside
// JSON strings, where their \u escapes mean the same characters.
std::string render_data_island(const std::vector<BenchRecord>& records) {
  nlohmann::json doc = {
      {"format", kResultsFormat}, {"version", 1}, {"records", nlohmann::json::array()}};
  for (const auto& r : records)
    doc["records"].push_back(record_to_json(r));
  std::string text = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out = fmt::format("<script type=\"application/json\" id=\"{}\">", kResultsIslandId);
  for (char c : text) {
    if (c == '<')
      out += "\\u003c";
    else if (c == '>')
      out += "\\u003e";
    else if (c == '&')
      out += "\\u0026";
    else
      out += c;
  }
  return out + "</script>\n";
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string render_html_report(const std::vector<BenchRecord>& records,
                               const HtmlReportOptions& options) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>" + html_escape(options.title) + "</title>\n<style>" + kStyle + "</style>\n";
  out += "</head>\n<body>\n" + render_header(records, options);
  out += render_summary(records);

  out +=
      "<h2>Speedup per task against each baseline</h2>\n<p class=\"meta\">Baseline time over "
      "ours, log scale; bars right of the dashed 1× line are faster than the baseline. Tasks "
      "that did not pass are gaps labelled with their outcome.</p>\n";
  out += render_speedup_chart(records, baseline_modes(records));

  std::string breakdowns;
  for (const auto& r : records)
    if (r.passed() && !r.top_kernels.empty())
      breakdowns += fmt::format(
          "<section class=\"kernel-breakdown\" data-key=\"{}\">\n<h3>{} "
          "<span class=\"meta\">({}, {} ms per forward)</span></h3>\n{}"
          "</section>\n",
          html_escape(r.key()), html_escape(r.task), html_escape(r.level), format_ms(r.ours_ms),
          render_kernel_breakdown(r));
  if (!breakdowns.empty())
    out +=
        "<h2>Time breakdown of the top kernels</h2>\n<p class=\"meta\">Per forward; "
        "\"other\" is the rest of our program's time.</p>\n" +
        breakdowns;

  out += render_task_table(records);
  out += render_data_island(records);
  out += "</body>\n</html>\n";
  return out;
}

}  // namespace stitch::bench
