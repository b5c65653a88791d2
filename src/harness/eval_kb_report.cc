// eval_kb.json's typed reader (eval_kb_report.h).
#include "harness/eval_kb_report.h"

#include "util/fs.h"
#include "util/json_fields.h"

namespace stitch::harness {

Result<EvalKbReport> eval_kb_report_from_json(const nlohmann::json& doc) {
  if (!doc.is_object()) return make_error(ErrorKind::bad_input, "not a JSON object");
  EvalKbReport report;
  STITCH_ASSIGN_OR_RETURN(report.outcome, read_enum<Outcome>(doc, "outcome"));
  report.reason = string_or(doc, "reason");
  report.track = string_or(doc, "track", "?");
  report.device = string_or(doc, "device", "?");
  report.median_ms = number_field(doc, "median_ms");
  report.eager_median_ms = number_field(doc, "eager_median_ms");
  report.speedup_vs_eager = number_field(doc, "speedup_vs_eager");
  if (auto findings = doc.find("findings"); findings != doc.end() && findings->is_array())
    report.findings = findings->size();
  report.document = doc;
  return report;
}

Result<EvalKbReport> read_eval_kb_report(const fs::path& path) {
  STITCH_ASSIGN_OR_RETURN(std::string text, read_file(path));
  auto report = eval_kb_report_from_json(nlohmann::json::parse(text, nullptr, false));
  if (!report.ok()) return report.error().with_context(path.string() + ": not an eval-kb result");
  return report;
}

}  // namespace stitch::harness
