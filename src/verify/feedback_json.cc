// feedback.json and the profile summary: the JSON forms and their typed readers, side by side
// (schema in feedback.h).
#include "util/fs.h"
#include "util/json_fields.h"
#include "verify/feedback.h"
#include "verify/verdict_json.h"

namespace stitch {
namespace {

using nlohmann::json;

json profiled_kernel_to_json(const ProfiledKernel& k) {
  return {{"name", k.name},
          {"duration_ms", k.duration_ms},
          {"bottleneck", k.bottleneck},
          {"dram_pct", optional_number(k.dram_pct)},
          {"sm_pct", optional_number(k.sm_pct)}};
}

// Unmeasured fields may be absent or null (profile_report.h): both read as "unknown".
Result<ProfiledKernel> profiled_kernel_from_json(const json& doc) {
  ProfiledKernel kernel;
  STITCH_TRY(read_field(doc, "name", kernel.name));
  STITCH_TRY(read_field(doc, "duration_ms", kernel.duration_ms));
  STITCH_TRY(read_field(doc, "bottleneck", kernel.bottleneck));
  kernel.dram_pct = number_field(doc, "dram_pct");
  kernel.sm_pct = number_field(doc, "sm_pct");
  return kernel;
}

json wrong_output_to_json(const WrongOutput& w) {
  json doc = output_check_to_json(w.check);
  doc.update({{"where", w.where}, {"elements", w.elements}, {"message", w.message}});
  return doc;
}

Result<WrongOutput> wrong_output_from_json(const json& doc) {
  WrongOutput w;
  STITCH_ASSIGN_OR_RETURN(w.check, output_check_from_json(doc));
  STITCH_TRY(read_field(doc, "where", w.where));
  STITCH_TRY(read_field(doc, "elements", w.elements));
  STITCH_TRY(read_field(doc, "message", w.message));
  return w;
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

json kernel_to_json(const KernelResources& k) {
  return {{"name", k.name},
          {"registers", k.registers},
          {"spill_bytes", k.spill_bytes},
          {"shared_bytes", k.shared_bytes}};
}

Result<KernelResources> kernel_from_json(const json& doc) {
  KernelResources k;
  STITCH_TRY(read_field(doc, "name", k.name));
  STITCH_TRY(read_field(doc, "registers", k.registers));
  STITCH_TRY(read_field(doc, "spill_bytes", k.spill_bytes));
  STITCH_TRY(read_field(doc, "shared_bytes", k.shared_bytes));
  return k;
}

json timing_to_json(const Feedback& feedback) {
  if (!feedback.timed) return nullptr;
  json baselines = json::array();
  for (const auto& b : feedback.baselines)
    baselines.push_back({{"mode", b.mode}, {"baseline_ms", b.baseline_ms}, {"speedup", b.speedup}});
  return {{"median_ms", feedback.median_ms},
          {"synced_median_ms", feedback.synced_median_ms},
          {"launches_per_forward", optional_number(feedback.launches_per_forward)},
          {"baselines", baselines}};
}

// A baseline's candidate time is the feedback's median (build_feedback takes the report's
// speedups, computed against the reported time).
Status timing_from_json(const json& doc, Feedback& feedback) {
  if (doc.is_null()) return {};
  if (!doc.is_object()) return make_error(ErrorKind::bad_input, "timing: not an object");
  feedback.timed = true;
  STITCH_TRY(read_field(doc, "median_ms", feedback.median_ms));
  STITCH_TRY(read_field(doc, "synced_median_ms", feedback.synced_median_ms));
  feedback.launches_per_forward = number_field(doc, "launches_per_forward");
  auto baseline_from_json = [&](const json& entry) -> Result<Speedup> {
    Speedup speedup;
    STITCH_TRY(read_field(entry, "mode", speedup.mode));
    STITCH_TRY(read_field(entry, "baseline_ms", speedup.baseline_ms));
    STITCH_TRY(read_field(entry, "speedup", speedup.speedup));
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
  auto kernels = read_array<ProfiledKernel>(doc, "kernels", profiled_kernel_from_json);
  if (!kernels.ok()) return kernels.error().with_context("profile: malformed");
  summary.kernels = std::move(*kernels);
  return summary;
}

Result<ProfileSummary> read_profile_summary(const std::filesystem::path& path) {
  STITCH_ASSIGN_OR_RETURN(json doc, read_json_file(path));
  auto summary = parse_profile_summary(doc);
  if (!summary.ok()) return summary.error().with_context(path.string());
  return summary;
}

json profile_summary_to_json(const ProfileSummary& profile) {
  return {{"kernels", json_array(profile.kernels, profiled_kernel_to_json)}};
}

json feedback_to_json(const Feedback& feedback) {
  return {{"format", "stitchcuda.feedback"},
          {"version", 1},
          {"state", enum_name(feedback.state)},
          {"outcome", feedback.outcome ? json(enum_name(*feedback.outcome)) : json(nullptr)},
          {"reason", feedback.reason},
          {"compile_errors", json_array(feedback.compile_errors, compile_error_to_json)},
          {"wrong_outputs", json_array(feedback.wrong_outputs, wrong_output_to_json)},
          {"findings", feedback.findings},
          {"timing", timing_to_json(feedback)},
          {"kernels", json_array(feedback.kernels, kernel_to_json)},
          {"profile", json_array(feedback.profile, profiled_kernel_to_json)},
          {"suggestion",
           {{"rule", enum_name(feedback.suggestion.rule)},
            {"text", feedback.suggestion.text}}}};
}

Result<Feedback> feedback_from_json(const json& doc) {
  if (!doc.is_object() || doc.value("format", "") != "stitchcuda.feedback")
    return make_error(ErrorKind::bad_input, "not a feedback.json (format \"stitchcuda.feedback\")");
  if (doc.value("version", 0) != 1)
    return make_error(ErrorKind::bad_input, "feedback.json version {} (this stitchcuda reads 1)",
                      doc.value("version", json()).dump());
  Feedback feedback;
  STITCH_ASSIGN_OR_RETURN(feedback.state,
                          read_enum<VerifyState>(doc, "state"));
  if (auto found = doc.find("outcome"); found != doc.end() && !found->is_null()) {
    STITCH_ASSIGN_OR_RETURN(feedback.outcome,
                            read_enum<Outcome>(doc, "outcome"));
  }
  STITCH_TRY(read_field(doc, "reason", feedback.reason));
  STITCH_ASSIGN_OR_RETURN(feedback.compile_errors,
                          read_array<Diagnostic>(doc, "compile_errors", compile_error_from_json));
  STITCH_ASSIGN_OR_RETURN(feedback.wrong_outputs,
                          read_array<WrongOutput>(doc, "wrong_outputs", wrong_output_from_json));
  STITCH_TRY(read_field(doc, "findings", feedback.findings));
  STITCH_TRY(timing_from_json(doc.value("timing", json()), feedback));
  STITCH_ASSIGN_OR_RETURN(feedback.kernels,
                          read_array<KernelResources>(doc, "kernels", kernel_from_json));
  STITCH_ASSIGN_OR_RETURN(feedback.profile,
                          read_array<ProfiledKernel>(doc, "profile", profiled_kernel_from_json));
  const json suggestion = doc.value("suggestion", json::object());
  STITCH_ASSIGN_OR_RETURN(feedback.suggestion.rule,
                          read_enum<SuggestionRule>(suggestion, "rule"));
  STITCH_TRY(read_field(suggestion, "text", feedback.suggestion.text));
  return feedback;
}

Result<Feedback> read_feedback(const std::filesystem::path& path) {
  STITCH_ASSIGN_OR_RETURN(json doc, read_json_file(path));
  auto feedback = feedback_from_json(doc);
  if (!feedback.ok()) return feedback.error().with_context(path.string());
  return feedback;
}

Status write_feedback(const std::filesystem::path& path, const Feedback& feedback) {
  return write_json_file(path, feedback_to_json(feedback));
}

}  // namespace stitch
