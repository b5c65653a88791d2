// The eval-kb judge and its eval_kb.json (eval_kb.h).
#include "harness/eval_kb.h"

#include <fmt/format.h>

#include "util/fs.h"
#include "util/json_fields.h"

namespace stitch::harness {
namespace {

// The last `count` non-empty lines of `text`, joined by " | ": a failed judge's last words.
std::string last_lines(const std::string& text, size_t count) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  std::string joined;
  for (size_t i = lines.size() > count ? lines.size() - count : 0; i < lines.size(); ++i)
    joined += (joined.empty() ? "" : " | ") + lines[i];
  return joined;
}

}  // namespace

Result<EvalKbReport> eval_kb_report_from_json(const nlohmann::json& doc) {
  if (!doc.is_object()) return make_error(ErrorKind::bad_input, "not a JSON object");
  EvalKbReport report;
  STITCH_ASSIGN_OR_RETURN(report.outcome, read_enum<Outcome>(doc, "outcome", outcome_from_name));
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

Result<EvalKbReport> PythonKernelBenchJudge::evaluate(const EvalKbRequest& request) {
  ProcessSpec spec =
      module_spec(location_, "stitch_harness.eval_kb",
                  {request.task.string(), request.solution.string(), "--out", request.out.string(),
                   "--track", request.track, "--trials", std::to_string(request.trials), "--iters",
                   std::to_string(request.iters), "--device", request.device, "--timeout",
                   fmt::format("{}", request.timeout_s)});
  // The candidate's limit is enforced inside; this one covers the reference and the eager
  // baseline too, and catches a judge that hangs.
  spec.timeout_s = request.timeout_s + 1800;
  STITCH_ASSIGN_OR_RETURN(ProcessResult process, runner_.run(spec));
  if (!request.log.empty())
    (void)write_file_atomic(request.log, process.stdout_text + process.stderr_text);
  std::error_code ec;
  if (!process.succeeded() || !fs::is_regular_file(request.out, ec))
    return make_error("eval-kb {}: {}", process.describe(), last_lines(process.stderr_text, 3));
  auto report = read_eval_kb_report(request.out);
  if (!report.ok()) return report.error().with_kind(ErrorKind::work_failed);
  return report;
}

}  // namespace stitch::harness
