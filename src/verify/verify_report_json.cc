// verify.json: the JSON form of a VerifyReport and its typed reader, side by side so the two
// cannot drift (schema in verify_report.h). Each part of the file has a writer and a reader here.
#include <fmt/format.h>

#include "util/fs.h"
#include "util/json_fields.h"
#include "verify/build/compiler.h"
#include "verify/verdict_json.h"
#include "verify/verify_report.h"

namespace stitch {
namespace {

using nlohmann::json;

// verify.json leaves out what only the build cache needs.
json kernel_to_json(const PtxasKernelReport& k) {
  json doc = ptxas_kernel_to_json(k);
  for (const char* key : {"mangled_name", "constant_bytes", "ptxas_ms"})
    doc.erase(key);
  return doc;
}

json build_to_json(const VerifyReport& report) {
  return {{"ok", report.built},
          {"cache_hit", report.build_cache_hit},
          {"seconds", report.build_seconds},
          {"library", report.library_path},
          {"failure", report.build_failure},
          {"command", report.build_command},
          {"diagnostics", json_array(report.diagnostics, diagnostic_to_json)},
          {"kernels", json_array(report.kernels, kernel_to_json)}};
}

Status build_from_json(const json& doc, VerifyReport& report) {
  STITCH_TRY(read_field(doc, "ok", report.built));
  STITCH_TRY(read_field(doc, "cache_hit", report.build_cache_hit));
  STITCH_TRY(read_field(doc, "seconds", report.build_seconds));
  STITCH_TRY(read_field(doc, "library", report.library_path));
  STITCH_TRY(read_field(doc, "failure", report.build_failure));
  STITCH_TRY(read_field(doc, "command", report.build_command));
  STITCH_ASSIGN_OR_RETURN(report.diagnostics,
                          read_array<Diagnostic>(doc, "diagnostics", diagnostic_from_json));
  STITCH_ASSIGN_OR_RETURN(report.kernels,
                          read_array<PtxasKernelReport>(doc, "kernels", ptxas_kernel_from_json));
  return {};
}

json finding_to_json(const FindingRecord& record) {
  json doc = {{"origin", record.origin}};
  doc.update(hack_finding_to_json(record.finding));
  return doc;
}

Result<FindingRecord> finding_from_json(const json& doc) {
  FindingRecord record;
  STITCH_TRY(read_field(doc, "origin", record.origin));
  STITCH_ASSIGN_OR_RETURN(record.finding, hack_finding_from_json(doc));
  return record;
}

json runner_to_json(const VerifyReport& report) {
  json launches = json::object();
  for (const auto& [name, count] : report.kernel_launches)
    launches[name] = count;
  return {{"ran", report.runner_ran},
          {"status", report.runner_status},
          {"reason", report.runner_reason},
          {"init_ms", report.init_ms},
          {"launches_per_forward", optional_number(report.launches_per_forward)},
          {"kernel_launches", launches},
          {"deterministic", report.deterministic}};
}

Status runner_from_json(const json& doc, VerifyReport& report) {
  STITCH_TRY(read_field(doc, "ran", report.runner_ran));
  STITCH_TRY(read_field(doc, "status", report.runner_status));
  STITCH_TRY(read_field(doc, "reason", report.runner_reason));
  STITCH_TRY(read_field(doc, "init_ms", report.init_ms));
  report.launches_per_forward = number_field(doc, "launches_per_forward");
  if (auto found = doc.find("kernel_launches"); found != doc.end() && found->is_object())
    for (const auto& [name, count] : found->items())
      if (count.is_number_integer()) report.kernel_launches.emplace_back(name, count.get<int>());
  STITCH_TRY(read_field(doc, "deterministic", report.deterministic));
  return {};
}

json timing_to_json(const VerifyReport& report) {
  return {{"protocol", timing_stats_to_json(report.timing)},
          {"synced", timing_stats_to_json(report.synced_timing)},
          {"wall", timing_stats_to_json(report.wall_timing)},
          {"speedup_basis", enum_name(report.timing_basis)},
          {"basis_detail", report.timing_basis_detail}};
}

Status timing_from_json(const json& doc, VerifyReport& report) {
  for (auto [key, stats] :
       {std::pair{"protocol", &report.timing}, std::pair{"synced", &report.synced_timing},
        std::pair{"wall", &report.wall_timing}}) {
    auto read = timing_stats_from_json(doc.value(key, json()));
    if (!read.ok()) return read.error().with_context(fmt::format("timing.{}", key));
    *stats = *read;
  }
  const std::string basis = string_or(doc, "speedup_basis", "synced");
  if (basis != "stream" && basis != "synced")
    return make_error(ErrorKind::bad_input, "timing.speedup_basis: unknown value '{}'", basis);
  report.timing_basis = basis == "stream" ? TimingBasis::stream : TimingBasis::synced;
  STITCH_TRY(read_field(doc, "basis_detail", report.timing_basis_detail));
  return {};
}

json checked_output_to_json(const CheckedOutput& output) {
  json doc = output_check_to_json(output.check);
  doc.update({{"where", output.where},
              {"passed", output.check.passed},
              {"elements", output.elements},
              {"message", output.message},
              {"degenerate_reference", output.degenerate_reference},
              {"exact_reference_elements", output.exact_reference_elements}});
  return doc;
}

Result<CheckedOutput> checked_output_from_json(const json& doc) {
  CheckedOutput output;
  STITCH_ASSIGN_OR_RETURN(output.check, output_check_from_json(doc));
  STITCH_TRY(read_field(doc, "where", output.where));
  STITCH_TRY(read_field(doc, "elements", output.elements));
  STITCH_TRY(read_field(doc, "message", output.message));
  STITCH_TRY(read_field(doc, "degenerate_reference", output.degenerate_reference));
  STITCH_TRY(read_field(doc, "exact_reference_elements", output.exact_reference_elements));
  return output;
}

json baselines_to_json(const VerifyReport& report) {
  json modes = json::object();
  for (const auto& baseline : report.baselines) {
    if (baseline.stats) {
      json entry = timing_stats_to_json(baseline.stats);
      entry["compile_s"] = baseline.compile_s;
      modes[baseline.mode] = entry;
    } else {
      modes[baseline.mode] = {{"error", baseline.error}};
    }
  }
  return {{"error", report.baseline_error},
          {"from_cache", report.baselines_from_cache},
          {"modes", modes}};
}

// Modes come back in name order (a JSON object's), as every reader of the file has seen them.
Status baselines_from_json(const json& doc, VerifyReport& report) {
  STITCH_TRY(read_field(doc, "error", report.baseline_error));
  STITCH_TRY(read_field(doc, "from_cache", report.baselines_from_cache));
  if (auto modes = doc.find("modes"); modes != doc.end() && modes->is_object())
    for (const auto& [mode, entry] : modes->items()) {
      BaselineTiming baseline;
      baseline.mode = mode;
      if (entry.contains("median_ms")) {
        auto stats = timing_stats_from_json(entry);
        if (!stats.ok()) return stats.error().with_context("baselines." + mode);
        baseline.stats = *stats;
        baseline.compile_s = number_or(entry, "compile_s", 0);
      } else {
        baseline.error = string_or(entry, "error");
      }
      report.baselines.push_back(std::move(baseline));
    }
  return {};
}

// The file keeps only each mode's ratio; both times are the ones it was computed from (the
// baseline's median and the report's time on the speedup basis, verifier.cc).
void speedups_from_json(const json& doc, VerifyReport& report) {
  if (!doc.is_object()) return;
  const double candidate_ms = report.reported_timing() ? report.reported_timing()->median_ms : 0;
  for (const auto& [mode, ratio] : doc.items()) {
    if (!ratio.is_number()) continue;
    Speedup speedup{mode, 0, candidate_ms, ratio.get<double>()};
    for (const auto& baseline : report.baselines)
      if (baseline.mode == mode && baseline.stats) speedup.baseline_ms = baseline.stats->median_ms;
    report.speedups.push_back(std::move(speedup));
  }
}

json step_to_json(const VerifyStep& step) {
  return {{"name", step.name},
          {"seconds", step.seconds},
          {"status", step.status},
          {"detail", step.detail}};
}

Result<VerifyStep> step_from_json(const json& doc) {
  VerifyStep step;
  STITCH_TRY(read_field(doc, "name", step.name));
  STITCH_TRY(read_field(doc, "seconds", step.seconds));
  STITCH_TRY(read_field(doc, "status", step.status));
  STITCH_TRY(read_field(doc, "detail", step.detail));
  return step;
}

// The header part: state, outcome and where it ran.
Status header_from_json(const json& doc, VerifyReport& report) {
  STITCH_ASSIGN_OR_RETURN(report.state,
                          read_enum<VerifyState>(doc, "state"));
  if (auto found = doc.find("outcome"); found != doc.end() && !found->is_null()) {
    STITCH_ASSIGN_OR_RETURN(report.outcome, read_enum<Outcome>(doc, "outcome"));
  }
  STITCH_TRY(read_field(doc, "reason", report.reason));
  STITCH_TRY(read_field(doc, "summary", report.summary));
  const std::string track = string_or(doc, "track", "fp32");
  std::optional<Track> parsed = enum_from_name<Track>(track);
  if (!parsed) return make_error(ErrorKind::bad_input, "track: unknown value '{}'", track);
  report.track = *parsed;
  report.rel_err_norm_max =
      number_or(doc.value("tolerance", json::object()), "rel_err_norm_max", 0);
  STITCH_TRY(read_field(doc, "arch", report.arch));
  STITCH_TRY(read_field(doc, "gpu", report.gpu_name));
  STITCH_TRY(read_field(doc, "capture_dir", report.capture_dir));
  STITCH_TRY(read_field(doc, "sources", report.sources));
  return {};
}

Result<VerifyReport> parse_verify_report(const json& doc) {
  VerifyReport report;
  STITCH_TRY(header_from_json(doc, report));
  STITCH_TRY(build_from_json(doc.value("build", json::object()), report));
  STITCH_ASSIGN_OR_RETURN(report.findings,
                          read_array<FindingRecord>(doc, "findings", finding_from_json));
  STITCH_TRY(runner_from_json(doc.value("runner", json::object()), report));
  STITCH_TRY(timing_from_json(doc.value("timing", json::object()), report));
  STITCH_ASSIGN_OR_RETURN(report.output_checks,
                          read_array<CheckedOutput>(doc, "outputs", checked_output_from_json));
  const json comparison = doc.value("comparison", json::object());
  STITCH_TRY(read_field(comparison, "ran", report.compared));
  STITCH_TRY(read_field(comparison, "messages", report.comparison_messages));
  STITCH_TRY(read_field(comparison, "degenerate_reasons", report.degenerate_reasons));
  STITCH_TRY(baselines_from_json(doc.value("baselines", json::object()), report));
  speedups_from_json(doc.value("speedups", json::object()), report);
  STITCH_ASSIGN_OR_RETURN(report.steps, read_array<VerifyStep>(doc, "steps", step_from_json));
  return report;
}

}  // namespace

json verify_report_to_json(const VerifyReport& report) {
  Tolerance tolerance = track_tolerance(report.track);
  json speedups = json::object();
  for (const auto& speedup : report.speedups)
    speedups[speedup.mode] = speedup.speedup;
  return {
      {"format", "stitchcuda.verify"},
      {"version", 1},
      {"state", enum_name(report.state)},
      {"outcome", report.outcome ? json(enum_name(*report.outcome)) : json(nullptr)},
      {"reason", report.reason},
      {"summary", report.summary},
      {"track", enum_name(report.track)},
      {"tolerance",
       {{"atol", tolerance.atol},
        {"rtol", tolerance.rtol},
        {"rel_err_norm_max",
         report.rel_err_norm_max > 0 ? json(report.rel_err_norm_max) : json(nullptr)}}},
      {"arch", report.arch},
      {"gpu", report.gpu_name},
      {"capture_dir", report.capture_dir},
      {"sources", report.sources},
      {"build", build_to_json(report)},
      {"findings", json_array(report.findings, finding_to_json)},
      {"runner", runner_to_json(report)},
      {"timing", timing_to_json(report)},
      {"outputs", json_array(report.output_checks, checked_output_to_json)},
      {"comparison",
       {{"ran", report.compared},
        {"messages", report.comparison_messages},
        {"degenerate_reasons", report.degenerate_reasons}}},
      {"baselines", baselines_to_json(report)},
      {"speedups", speedups},
      {"steps", json_array(report.steps, step_to_json)},
  };
}

Result<VerifyReport> verify_report_from_json(const json& doc) {
  if (!doc.is_object() || doc.value("format", "") != "stitchcuda.verify")
    return make_error(ErrorKind::bad_input, "not a verify.json (format \"stitchcuda.verify\")");
  if (doc.value("version", 0) != 1)
    return make_error(ErrorKind::bad_input, "verify.json version {} (this stitchcuda reads 1)",
                      doc.value("version", json()).dump());
  return parse_verify_report(doc);
}

Result<VerifyReport> read_verify_report(const std::filesystem::path& path) {
  STITCH_ASSIGN_OR_RETURN(json doc, read_json_file(path));
  auto report = verify_report_from_json(doc);
  if (!report.ok()) return report.error().with_context(path.string());
  return report;
}

Status write_verify_report(const std::filesystem::path& path, const VerifyReport& report) {
  return write_json_file(path, verify_report_to_json(report));
}

}  // namespace stitch
