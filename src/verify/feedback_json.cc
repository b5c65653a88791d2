// feedback.json and the profile summary: the JSON forms and their typed readers, side by side
// (schema in feedback.h).
#include <tuple>

#include "util/fs.h"
#include "util/json_fields.h"
#include "verify/feedback.h"
#include "verify/verdict_json.h"

namespace stitch {
namespace {

using nlohmann::json;

// Unmeasured percentages may be absent or null (profile_report.h): both read as "unknown".
constexpr std::tuple kProfiledKernelFields = {
    JsonField{"name", &ProfiledKernel::name},
    JsonField{"duration_ms", &ProfiledKernel::duration_ms},
    JsonField{"bottleneck", &ProfiledKernel::bottleneck},
    JsonField{"dram_pct", &ProfiledKernel::dram_pct}, JsonField{"sm_pct", &ProfiledKernel::sm_pct}};
// The OutputCheck's own fields (verdict_json.h) share the object.
constexpr std::tuple kWrongOutputFields = {JsonField{"where", &WrongOutput::where},
                                           JsonField{"elements", &WrongOutput::elements},
                                           JsonField{"message", &WrongOutput::message}};
constexpr std::tuple kKernelResourcesFields = {
    JsonField{"name", &KernelResources::name}, JsonField{"registers", &KernelResources::registers},
    JsonField{"spill_bytes", &KernelResources::spill_bytes},
    JsonField{"shared_bytes", &KernelResources::shared_bytes}};
constexpr std::tuple kTimingFields = {
    JsonField{"median_ms", &Feedback::median_ms},
    JsonField{"synced_median_ms", &Feedback::synced_median_ms},
    JsonField{"launches_per_forward", &Feedback::launches_per_forward}};
// A baseline's candidate time is not stored: it is the feedback's median.
constexpr std::tuple kBaselineFields = {JsonField{"mode", &Speedup::mode},
                                        JsonField{"baseline_ms", &Speedup::baseline_ms},
                                        JsonField{"speedup", &Speedup::speedup}};
constexpr std::tuple kDeclarationNoteFields = {
    JsonField{"identifier", &DeclarationNote::identifier},
    JsonField{"name", &DeclarationNote::name}, JsonField{"path", &DeclarationNote::path},
    JsonField{"line_begin", &DeclarationNote::line_begin},
    JsonField{"line_end", &DeclarationNote::line_end}, JsonField{"text", &DeclarationNote::text}};
constexpr std::tuple kHeaderFields = {
    JsonField{"state", &Feedback::state}, JsonField{"outcome", &Feedback::outcome},
    JsonField{"reason", &Feedback::reason}, JsonField{"findings", &Feedback::findings}};
constexpr std::tuple kSuggestionFields = {JsonField{"rule", &Suggestion::rule},
                                          JsonField{"text", &Suggestion::text}};

json wrong_output_to_json(const WrongOutput& wrong) {
  return checked_record_to_json(wrong, kWrongOutputFields);
}

Result<WrongOutput> wrong_output_from_json(const json& doc) {
  return checked_record_from_json<WrongOutput>(doc, kWrongOutputFields);
}

// feedback.json keeps compile errors only, without their severity.
json compile_error_to_json(const Diagnostic& d) {
  json doc = diagnostic_to_json(d);
  doc.erase("severity");
  return doc;
}

Result<Diagnostic> compile_error_from_json(const json& doc) {
  STITCH_ASSIGN_OR_RETURN(Diagnostic d, diagnostic_from_json(doc));
  d.severity = "error";
  return d;
}

json timing_to_json(const Feedback& feedback) {
  if (!feedback.timed) return nullptr;
  json doc = fields_to_json(feedback, kTimingFields);
  doc["baselines"] = records_to_json(feedback.baselines, kBaselineFields);
  return doc;
}

// A baseline's candidate time is the feedback's median (build_feedback takes the report's
// speedups, computed against the reported time).
Status timing_from_json(const json& doc, Feedback& feedback) {
  if (doc.is_null()) return {};
  if (!doc.is_object()) return make_error(ErrorKind::bad_input, "timing: not an object");
  feedback.timed = true;
  STITCH_TRY(read_fields(doc, feedback, kTimingFields));
  auto baseline_from_json = [&](const json& entry) -> Result<Speedup> {
    Speedup speedup;
    STITCH_TRY(read_fields(entry, speedup, kBaselineFields));
    speedup.candidate_ms = feedback.median_ms;
    return speedup;
  };
  STITCH_ASSIGN_OR_RETURN(feedback.baselines,
                          read_array<Speedup>(doc, "baselines", baseline_from_json));
  return {};
}

}  // namespace

Result<ProfileSummary> parse_profile_summary(const json& doc) {
  if (!doc.is_object() || !doc.contains("kernels") || !doc["kernels"].is_array())
    return make_error(ErrorKind::bad_input, "profile: no 'kernels' array");
  ProfileSummary summary;
  auto kernels = read_records<ProfiledKernel>(doc, "kernels", kProfiledKernelFields);
  if (!kernels.ok()) return kernels.error().with_context("profile: malformed");
  summary.kernels = std::move(*kernels);
  return summary;
}

Result<ProfileSummary> read_profile_summary(const std::filesystem::path& path) {
  return read_json_file_as(path, parse_profile_summary);
}

json profile_summary_to_json(const ProfileSummary& profile) {
  return {{"kernels", records_to_json(profile.kernels, kProfiledKernelFields)}};
}

json feedback_to_json(const Feedback& feedback) {
  json doc = fields_to_json(feedback, kHeaderFields);
  doc.update({{"format", "stitchcuda.feedback"},
              {"version", 1},
              {"compile_errors", json_array(feedback.compile_errors, compile_error_to_json)},
              {"declarations", records_to_json(feedback.declarations, kDeclarationNoteFields)},
              {"wrong_outputs", json_array(feedback.wrong_outputs, wrong_output_to_json)},
              {"timing", timing_to_json(feedback)},
              {"kernels", records_to_json(feedback.kernels, kKernelResourcesFields)},
              {"profile", records_to_json(feedback.profile, kProfiledKernelFields)},
              {"suggestion", fields_to_json(feedback.suggestion, kSuggestionFields)}});
  return doc;
}

Result<Feedback> feedback_from_json(const json& doc) {
  STITCH_TRY(check_file_format(doc, "feedback.json", "stitchcuda.feedback", 1));
  Feedback feedback;
  STITCH_TRY(read_fields(doc, feedback, kHeaderFields));
  STITCH_ASSIGN_OR_RETURN(feedback.compile_errors,
                          read_array<Diagnostic>(doc, "compile_errors", compile_error_from_json));
  STITCH_ASSIGN_OR_RETURN(
      feedback.declarations,
      read_records<DeclarationNote>(doc, "declarations", kDeclarationNoteFields));
  STITCH_ASSIGN_OR_RETURN(feedback.wrong_outputs,
                          read_array<WrongOutput>(doc, "wrong_outputs", wrong_output_from_json));
  STITCH_TRY(timing_from_json(doc.value("timing", json()), feedback));
  STITCH_ASSIGN_OR_RETURN(feedback.kernels,
                          read_records<KernelResources>(doc, "kernels", kKernelResourcesFields));
  STITCH_ASSIGN_OR_RETURN(feedback.profile,
                          read_records<ProfiledKernel>(doc, "profile", kProfiledKernelFields));
  STITCH_TRY(
      read_fields(doc.value("suggestion", json::object()), feedback.suggestion, kSuggestionFields));
  return feedback;
}

Result<Feedback> read_feedback(const std::filesystem::path& path) {
  return read_json_file_as(path, feedback_from_json);
}

Status write_feedback(const std::filesystem::path& path, const Feedback& feedback) {
  return write_json_file(path, feedback_to_json(feedback));
}

}  // namespace stitch
