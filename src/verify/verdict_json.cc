// The JSON forms of verdict.h's records (verdict_json.h): each record's fields listed once, as a
// table both its writer and its reader walk (util/json_fields.h).
#include "verify/verdict_json.h"

#include <tuple>

#include "util/json_fields.h"

namespace stitch {
namespace {

using nlohmann::json;

constexpr std::tuple kTimingStatsFields = {
    FiniteField{"median_ms", &TimingStats::median_ms}, FiniteField{"p10_ms", &TimingStats::p10_ms},
    FiniteField{"p90_ms", &TimingStats::p90_ms}, FiniteField{"min_ms", &TimingStats::min_ms},
    JsonField{"iterations", &TimingStats::iterations}};

// `passed` is not in the table: the writers that keep it add it (feedback lists failures only).
constexpr std::tuple kOutputCheckFields = {
    JsonField{"output_index", &OutputCheck::output_index},
    FiniteField{"max_abs_error", &OutputCheck::max_abs_error},
    JsonField{"max_abs_error_index", &OutputCheck::max_abs_error_index},
    FiniteField{"relative_error_norm", &OutputCheck::relative_error_norm},
    JsonField{"mismatches", &OutputCheck::mismatches},
    JsonField{"first_mismatch_index", &OutputCheck::first_mismatch_index},
    JsonField{"nan_or_inf", &OutputCheck::nan_or_inf}};

constexpr std::tuple kDiagnosticFields = {
    JsonField{"file", &Diagnostic::file}, JsonField{"line", &Diagnostic::line},
    JsonField{"severity", &Diagnostic::severity}, JsonField{"message", &Diagnostic::message},
    JsonField{"snippet", &Diagnostic::snippet}};

constexpr std::tuple kHackFindingFields = {JsonField{"kind", &HackFinding::kind},
                                           JsonField{"detail", &HackFinding::detail},
                                           JsonField{"fatal", &HackFinding::fatal}};

}  // namespace

json timing_stats_to_json(const std::optional<TimingStats>& stats) {
  if (!stats) return nullptr;
  return fields_to_json(*stats, kTimingStatsFields);
}

Result<std::optional<TimingStats>> timing_stats_from_json(const json& doc) {
  if (doc.is_null()) return std::optional<TimingStats>();
  if (!doc.is_object()) return make_error(ErrorKind::bad_input, "timing stats: not an object");
  TimingStats stats;
  STITCH_TRY(read_fields(doc, stats, kTimingStatsFields));
  return std::optional(stats);
}

json output_check_to_json(const OutputCheck& check) {
  return fields_to_json(check, kOutputCheckFields);
}

Result<OutputCheck> output_check_from_json(const json& doc) {
  OutputCheck check;
  STITCH_TRY(read_fields(doc, check, kOutputCheckFields));
  STITCH_TRY(read_field(doc, "passed", check.passed));
  return check;
}

json diagnostic_to_json(const Diagnostic& diagnostic) {
  return fields_to_json(diagnostic, kDiagnosticFields);
}

Result<Diagnostic> diagnostic_from_json(const json& doc) {
  return record_from_json<Diagnostic>(doc, kDiagnosticFields);
}

json hack_finding_to_json(const HackFinding& finding) {
  return fields_to_json(finding, kHackFindingFields);
}

Result<HackFinding> hack_finding_from_json(const json& doc) {
  return record_from_json<HackFinding>(doc, kHackFindingFields);
}

}  // namespace stitch
