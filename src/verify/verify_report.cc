// VerifyReport helpers: timing statistics, speedups and the human summary (verify_report.h);
// verify.json itself is verify_report_json.cc.
#include "verify/verify_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace stitch {
namespace {

double percentile(const std::vector<double>& sorted, double fraction) {
  double position = fraction * static_cast<double>(sorted.size() - 1);
  size_t lower = static_cast<size_t>(std::floor(position));
  size_t upper = std::min(lower + 1, sorted.size() - 1);
  double weight = position - static_cast<double>(lower);
  return sorted[lower] * (1.0 - weight) + sorted[upper] * weight;
}

std::string build_line(const VerifyReport& report) {
  if (!report.built) {
    if (report.build_failure.empty() && report.diagnostics.empty()) return "";
    int errors = 0;
    const Diagnostic* first = nullptr;
    for (const auto& d : report.diagnostics)
      if (d.severity == "error") {
        ++errors;
        if (!first) first = &d;
      }
    std::string line = fmt::format("build: failed ({})", report.build_failure);
    if (first)
      line += fmt::format("; {} error{}, first: {}:{}: {}", errors, errors == 1 ? "" : "s",
                          first->file, first->line, first->message);
    return line;
  }
  int max_registers = 0;
  int64_t spills = 0;
  for (const auto& kernel : report.kernels) {
    max_registers = std::max(max_registers, kernel.registers);
    spills += kernel.spill_store_bytes + kernel.spill_load_bytes;
  }
  return fmt::format("build: ok in {:.1f} s{}, {} kernel{}, max {} registers, {}",
                     report.build_seconds, report.build_cache_hit ? " (cached)" : "",
                     report.kernels.size(), report.kernels.size() == 1 ? "" : "s", max_registers,
                     spills ? fmt::format("{} spill bytes", spills) : std::string("no spills"));
}

std::string findings_line(const VerifyReport& report) {
  int fatal = 0, notes = 0;
  const FindingRecord* first_fatal = nullptr;
  for (const auto& record : report.findings) {
    if (record.finding.fatal) {
      ++fatal;
      if (!first_fatal) first_fatal = &record;
    } else {
      ++notes;
    }
  }
  if (fatal == 0 && notes == 0) return "";
  std::string line = fmt::format("findings: {} fatal, {} note{}", fatal, notes, notes == 1 ? "" : "s");
  if (first_fatal)
    line += fmt::format(" (first: {} from {}: {})", enum_name(first_fatal->finding.kind),
                        first_fatal->origin, first_fatal->finding.detail);
  return line;
}

std::string outputs_line(const VerifyReport& report) {
  if (!report.compared) return "";
  size_t failed = 0;
  double worst_norm = 0;
  const CheckedOutput* first_failed = nullptr;
  for (const auto& output : report.output_checks) {
    worst_norm = std::max(worst_norm, output.check.relative_error_norm);
    if (!output.check.passed) {
      ++failed;
      if (!first_failed) first_failed = &output;
    }
  }
  std::string line =
      failed == 0 ? fmt::format("outputs: all {} checks passed", report.output_checks.size())
                  : fmt::format("outputs: {} of {} checks failed", failed,
                                report.output_checks.size());
  line += fmt::format(", max relative error norm {:.2e}", worst_norm);
  if (first_failed) line += fmt::format("; {}: {}", first_failed->where, first_failed->message);
  return line;
}

std::string timing_line(const VerifyReport& report) {
  const std::optional<TimingStats>& timing = report.reported_timing();
  if (!timing) return "";
  std::string line = fmt::format("time: {} median (p10 {}, p90 {}; {} time)",
                                 format_duration_ms(timing->median_ms),
                                 format_duration_ms(timing->p10_ms),
                                 format_duration_ms(timing->p90_ms),
                                 report.timing_basis == TimingBasis::stream ? "caller's-stream"
                                                                            : "to device idle");
  line += fmt::format("; init {}", format_duration_ms(report.init_ms));
  if (report.launches_per_forward)
    line += fmt::format("; {:g} launches/forward", *report.launches_per_forward);
  return line;
}

std::string speedup_line(const VerifyReport& report) {
  if (!report.speedups.empty()) {
    std::string line = "speedup:";
    for (size_t i = 0; i < report.speedups.size(); ++i)
      line += fmt::format("{} {:.2f}x {} ({})", i ? "," : "", report.speedups[i].speedup,
                          report.speedups[i].mode,
                          format_duration_ms(report.speedups[i].baseline_ms));
    return line;
  }
  if (!report.baseline_error.empty()) return "baselines: unavailable: " + report.baseline_error;
  return "";
}

}  // namespace

bool VerifyReport::has_fatal_finding() const {
  return std::any_of(findings.begin(), findings.end(),
                     [](const FindingRecord& record) { return record.finding.fatal; });
}

const VerifyStep* VerifyReport::step(std::string_view name) const {
  for (const auto& entry : steps)
    if (entry.name == name) return &entry;
  return nullptr;
}

std::optional<double> VerifyReport::speedup_vs(std::string_view mode) const {
  for (const auto& entry : speedups)
    if (entry.mode == mode) return entry.speedup;
  return std::nullopt;
}

std::optional<TimingStats> timing_stats(std::vector<double> times_ms) {
  if (times_ms.empty()) return std::nullopt;
  std::sort(times_ms.begin(), times_ms.end());
  TimingStats stats;
  stats.median_ms = percentile(times_ms, 0.5);
  stats.p10_ms = percentile(times_ms, 0.1);
  stats.p90_ms = percentile(times_ms, 0.9);
  stats.min_ms = times_ms.front();
  stats.iterations = static_cast<int>(times_ms.size());
  return stats;
}

std::vector<Speedup> compute_speedups(const std::vector<BaselineTiming>& baselines,
                                      double candidate_ms) {
  std::vector<Speedup> speedups;
  if (!(candidate_ms > 0) || !std::isfinite(candidate_ms)) return speedups;
  for (const auto& baseline : baselines) {
    if (!baseline.stats || !(baseline.stats->median_ms > 0)) continue;
    speedups.push_back({baseline.mode, baseline.stats->median_ms, candidate_ms,
                        baseline.stats->median_ms / candidate_ms});
  }
  return speedups;
}

std::string format_duration_ms(double ms) {
  if (!std::isfinite(ms)) return "inf";
  if (ms < 1.0) return fmt::format("{:.1f} us", ms * 1e3);
  if (ms < 1000.0) return fmt::format("{:.3f} ms", ms);
  return fmt::format("{:.2f} s", ms / 1e3);
}

std::vector<std::string> summarize(const VerifyReport& report) {
  std::vector<std::string> lines;
  std::string where = fmt::format("{} track, {}, {}", enum_name(report.track),
                                  report.gpu_name.empty() ? "no GPU" : report.gpu_name,
                                  report.arch);
  switch (report.state) {
    case VerifyState::verified:
      lines.push_back(fmt::format("{} ({}){}",
                                  report.outcome ? enum_name(*report.outcome) : "not decided",
                                  where, report.reason.empty() ? "" : ": " + report.reason));
      break;
    case VerifyState::no_gpu:
      lines.push_back("no CUDA device: built and statically checked; run on a GPU machine to verify");
      break;
    case VerifyState::infrastructure_error:
      lines.push_back(fmt::format("not verified ({}): {}", where, report.reason));
      break;
  }
  // Right under the verdict: a pass without every sandbox layer is not a pass to trust blindly.
  if (!report.insecure_sandbox.empty())
    lines.push_back(fmt::format("INSECURE SANDBOX: ran without {} (--insecure-sandbox)",
                                fmt::join(report.insecure_sandbox, ", ")));
  for (const std::string& line : {build_line(report), findings_line(report), outputs_line(report),
                                  timing_line(report), speedup_line(report)}) {
    if (!line.empty() && lines.size() < 6) lines.push_back(line);
  }
  if (lines.size() < 3) {
    double total = 0;
    for (const auto& step : report.steps) total += step.seconds;
    lines.push_back(fmt::format("steps: {} in {:.1f} s", report.steps.size(), total));
  }
  return lines;
}

}  // namespace stitch
