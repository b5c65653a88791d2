// The JSON forms of verdict.h's records (verdict_json.h).
#include "verify/verdict_json.h"

#include "util/json_fields.h"

namespace stitch {

using nlohmann::json;

json timing_stats_to_json(const std::optional<TimingStats>& stats) {
  if (!stats) return nullptr;
  return {{"median_ms", finite_or_null(stats->median_ms)},
          {"p10_ms", finite_or_null(stats->p10_ms)},
          {"p90_ms", finite_or_null(stats->p90_ms)},
          {"min_ms", finite_or_null(stats->min_ms)},
          {"iterations", stats->iterations}};
}

Result<std::optional<TimingStats>> timing_stats_from_json(const json& doc) {
  if (doc.is_null()) return std::optional<TimingStats>();
  if (!doc.is_object()) return make_error(ErrorKind::bad_input, "timing stats: not an object");
  TimingStats stats;
  stats.median_ms = number_or_infinity(doc, "median_ms");
  stats.p10_ms = number_or_infinity(doc, "p10_ms");
  stats.p90_ms = number_or_infinity(doc, "p90_ms");
  stats.min_ms = number_or_infinity(doc, "min_ms");
  STITCH_TRY(read_field(doc, "iterations", stats.iterations));
  return std::optional(stats);
}

json output_check_to_json(const OutputCheck& check) {
  return {{"output_index", check.output_index},
          {"max_abs_error", finite_or_null(check.max_abs_error)},
          {"max_abs_error_index", check.max_abs_error_index},
          {"relative_error_norm", finite_or_null(check.relative_error_norm)},
          {"mismatches", check.mismatches},
          {"first_mismatch_index", check.first_mismatch_index},
          {"nan_or_inf", check.nan_or_inf}};
}

Result<OutputCheck> output_check_from_json(const json& doc) {
  OutputCheck check;
  STITCH_TRY(read_field(doc, "output_index", check.output_index));
  STITCH_TRY(read_field(doc, "passed", check.passed));
  check.max_abs_error = number_or_infinity(doc, "max_abs_error");
  STITCH_TRY(read_field(doc, "max_abs_error_index", check.max_abs_error_index));
  check.relative_error_norm = number_or_infinity(doc, "relative_error_norm");
  STITCH_TRY(read_field(doc, "mismatches", check.mismatches));
  STITCH_TRY(read_field(doc, "first_mismatch_index", check.first_mismatch_index));
  STITCH_TRY(read_field(doc, "nan_or_inf", check.nan_or_inf));
  return check;
}

json diagnostic_to_json(const Diagnostic& d) {
  return {{"file", d.file},
          {"line", d.line},
          {"severity", d.severity},
          {"message", d.message},
          {"snippet", d.snippet}};
}

Result<Diagnostic> diagnostic_from_json(const json& doc) {
  Diagnostic d;
  STITCH_TRY(read_field(doc, "file", d.file));
  STITCH_TRY(read_field(doc, "line", d.line));
  STITCH_TRY(read_field(doc, "severity", d.severity));
  STITCH_TRY(read_field(doc, "message", d.message));
  STITCH_TRY(read_field(doc, "snippet", d.snippet));
  return d;
}

json hack_finding_to_json(const HackFinding& finding) {
  return {
      {"kind", enum_name(finding.kind)}, {"detail", finding.detail}, {"fatal", finding.fatal}};
}

Result<HackFinding> hack_finding_from_json(const json& doc) {
  HackFinding finding{};
  STITCH_ASSIGN_OR_RETURN(finding.kind, read_enum<HackKind>(doc, "kind"));
  STITCH_TRY(read_field(doc, "detail", finding.detail));
  STITCH_TRY(read_field(doc, "fatal", finding.fatal));
  return finding;
}

}  // namespace stitch
