// verify.json: the JSON form of a VerifyReport and its typed reader, side by side so the two
// cannot drift (schema in verify_report.h). Each part of the file has a writer and a reader here.
#include <tuple>

#include <fmt/format.h>

#include "util/fs.h"
#include "util/json_fields.h"
#include "verify/build/compiler.h"
#include "verify/verdict_json.h"
#include "verify/verify_report.h"

namespace stitch {
namespace {

using nlohmann::json;

// The parts of verify.json stored straight from a VerifyReport member, part by part.
constexpr std::tuple kHeaderFields = {JsonField{"state", &VerifyReport::state},
                                      JsonField{"outcome", &VerifyReport::outcome},
                                      JsonField{"reason", &VerifyReport::reason},
                                      JsonField{"summary", &VerifyReport::summary},
                                      JsonField{"arch", &VerifyReport::arch},
                                      JsonField{"gpu", &VerifyReport::gpu_name},
                                      JsonField{"capture_dir", &VerifyReport::capture_dir},
                                      JsonField{"sources", &VerifyReport::sources},
                                      JsonField{"insecure_sandbox", &VerifyReport::insecure_sandbox}};
constexpr std::tuple kBuildFields = {JsonField{"ok", &VerifyReport::built},
                                     JsonField{"cache_hit", &VerifyReport::build_cache_hit},
                                     JsonField{"seconds", &VerifyReport::build_seconds},
                                     JsonField{"library", &VerifyReport::library_path},
                                     JsonField{"failure", &VerifyReport::build_failure},
                                     JsonField{"command", &VerifyReport::build_command}};
constexpr std::tuple kRunnerFields = {
    JsonField{"ran", &VerifyReport::runner_ran},
    JsonField{"status", &VerifyReport::runner_status},
    JsonField{"reason", &VerifyReport::runner_reason},
    JsonField{"init_ms", &VerifyReport::init_ms},
    JsonField{"launches_per_forward", &VerifyReport::launches_per_forward},
    JsonField{"deterministic", &VerifyReport::deterministic}};
constexpr std::tuple kComparisonFields = {
    JsonField{"ran", &VerifyReport::compared},
    JsonField{"messages", &VerifyReport::comparison_messages},
    JsonField{"degenerate_reasons", &VerifyReport::degenerate_reasons}};
constexpr std::tuple kBaselinesFields = {
    JsonField{"error", &VerifyReport::baseline_error},
    JsonField{"from_cache", &VerifyReport::baselines_from_cache}};
// `passed` and the OutputCheck's own fields (verdict_json.h) share the object.
constexpr std::tuple kCheckedOutputFields = {
    JsonField{"where", &CheckedOutput::where}, JsonField{"elements", &CheckedOutput::elements},
    JsonField{"message", &CheckedOutput::message},
    JsonField{"degenerate_reference", &CheckedOutput::degenerate_reference},
    JsonField{"exact_reference_elements", &CheckedOutput::exact_reference_elements}};
constexpr std::tuple kStepFields = {
    JsonField{"name", &VerifyStep::name}, JsonField{"seconds", &VerifyStep::seconds},
    JsonField{"status", &VerifyStep::status}, JsonField{"detail", &VerifyStep::detail}};

// verify.json leaves out what only the build cache needs.
json kernel_to_json(const PtxasKernelReport& k) {
  json doc = ptxas_kernel_to_json(k);
  for (const char* key : {"mangled_name", "constant_bytes", "ptxas_ms"})
    doc.erase(key);
  return doc;
}

json build_to_json(const VerifyReport& report) {
  json doc = fields_to_json(report, kBuildFields);
  doc["diagnostics"] = json_array(report.diagnostics, diagnostic_to_json);
  doc["kernels"] = json_array(report.kernels, kernel_to_json);
  doc["sandbox"] = sandbox::layers_to_json(report.build_sandbox);
  return doc;
}

Status build_from_json(const json& doc, VerifyReport& report) {
  STITCH_TRY(read_fields(doc, report, kBuildFields));
  STITCH_ASSIGN_OR_RETURN(report.diagnostics,
                          read_array<Diagnostic>(doc, "diagnostics", diagnostic_from_json));
  STITCH_ASSIGN_OR_RETURN(report.kernels,
                          read_array<PtxasKernelReport>(doc, "kernels", ptxas_kernel_from_json));
  report.build_sandbox = sandbox::layers_from_json(doc.value("sandbox", json::array()));
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
  json doc = fields_to_json(report, kRunnerFields);
  json& launches = doc["kernel_launches"] = json::object();
  for (const auto& [name, count] : report.kernel_launches)
    launches[name] = count;
  doc["sandbox"] = sandbox::layers_to_json(report.runner_sandbox);
  return doc;
}

Status runner_from_json(const json& doc, VerifyReport& report) {
  STITCH_TRY(read_fields(doc, report, kRunnerFields));
  if (auto found = doc.find("kernel_launches"); found != doc.end() && found->is_object())
    for (const auto& [name, count] : found->items())
      if (count.is_number_integer()) report.kernel_launches.emplace_back(name, count.get<int>());
  report.runner_sandbox = sandbox::layers_from_json(doc.value("sandbox", json::array()));
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
  std::optional<TimingBasis> parsed = enum_from_name<TimingBasis>(basis);
  if (!parsed)
    return make_error(ErrorKind::bad_input, "timing.speedup_basis: unknown value '{}'", basis);
  report.timing_basis = *parsed;
  STITCH_TRY(read_field(doc, "basis_detail", report.timing_basis_detail));
  return {};
}

json checked_output_to_json(const CheckedOutput& output) {
  json doc = checked_record_to_json(output, kCheckedOutputFields);
  doc["passed"] = output.check.passed;
  return doc;
}

Result<CheckedOutput> checked_output_from_json(const json& doc) {
  return checked_record_from_json<CheckedOutput>(doc, kCheckedOutputFields);
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
  json doc = fields_to_json(report, kBaselinesFields);
  doc["modes"] = std::move(modes);
  return doc;
}

// Modes come back in name order (a JSON object's), as every reader of the file has seen them.
Status baselines_from_json(const json& doc, VerifyReport& report) {
  STITCH_TRY(read_fields(doc, report, kBaselinesFields));
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

// The header part: state, outcome and where it ran.
Status header_from_json(const json& doc, VerifyReport& report) {
  STITCH_TRY(read_fields(doc, report, kHeaderFields));
  const std::string track = string_or(doc, "track", "fp32");
  std::optional<Track> parsed = enum_from_name<Track>(track);
  if (!parsed) return make_error(ErrorKind::bad_input, "track: unknown value '{}'", track);
  report.track = *parsed;
  report.rel_err_norm_max =
      number_or(doc.value("tolerance", json::object()), "rel_err_norm_max", 0);
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
  STITCH_TRY(read_fields(doc.value("comparison", json::object()), report, kComparisonFields));
  STITCH_TRY(baselines_from_json(doc.value("baselines", json::object()), report));
  speedups_from_json(doc.value("speedups", json::object()), report);
  STITCH_ASSIGN_OR_RETURN(report.steps, read_records<VerifyStep>(doc, "steps", kStepFields));
  return report;
}

}  // namespace

json verify_report_to_json(const VerifyReport& report) {
  Tolerance tolerance = track_tolerance(report.track);
  json speedups = json::object();
  for (const auto& speedup : report.speedups)
    speedups[speedup.mode] = speedup.speedup;
  json doc = fields_to_json(report, kHeaderFields);
  doc.update({
      {"format", "stitchcuda.verify"},
      {"version", 1},
      {"track", enum_name(report.track)},
      {"tolerance",
       {{"atol", tolerance.atol},
        {"rtol", tolerance.rtol},
        {"rel_err_norm_max",
         report.rel_err_norm_max > 0 ? json(report.rel_err_norm_max) : json(nullptr)}}},
      {"build", build_to_json(report)},
      {"findings", json_array(report.findings, finding_to_json)},
      {"runner", runner_to_json(report)},
      {"timing", timing_to_json(report)},
      {"outputs", json_array(report.output_checks, checked_output_to_json)},
      {"comparison", fields_to_json(report, kComparisonFields)},
      {"baselines", baselines_to_json(report)},
      {"speedups", speedups},
      {"steps", records_to_json(report.steps, kStepFields)},
  });
  return doc;
}

Result<VerifyReport> verify_report_from_json(const json& doc) {
  STITCH_TRY(check_file_format(doc, "verify.json", "stitchcuda.verify", 1));
  return parse_verify_report(doc);
}

Result<VerifyReport> read_verify_report(const std::filesystem::path& path) {
  return read_json_file_as(path, verify_report_from_json);
}

Status write_verify_report(const std::filesystem::path& path, const VerifyReport& report) {
  return write_json_file(path, verify_report_to_json(report));
}

}  // namespace stitch
