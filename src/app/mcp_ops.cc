#include "app/mcp_ops.h"

#include <algorithm>

#include <fmt/format.h>

#include "agents/run_state.h"
#include "app/capture.h"
#include "app/profile.h"
#include "app/verify.h"
#include "ir/print.h"
#include "rag/doc_index.h"
#include "rag/search.h"
#include "util/enum_names.h"
#include "util/fs.h"
#include "util/process.h"

namespace stitch::app {

namespace fs = std::filesystem;
using nlohmann::json;

std::string SystemStitchOps::runs_dir(const std::string& asked) const {
  return asked.empty() ? options_.runs_dir : asked;
}

std::function<void(const std::string&)> SystemStitchOps::sink(
    const mcp::ProgressReport& progress) const {
  return [log = options_.log, progress](const std::string& line) {
    if (log) log(line);
    if (progress) progress(line);
  };
}

Result<mcp::CaptureReply> SystemStitchOps::capture(const mcp::CaptureRequest& request,
                                                   const mcp::ProgressReport& progress) {
  std::lock_guard lock(gpu_work_);
  CaptureOptions options;
  options.paths = {request.task};
  options.runs_dir = runs_dir(request.runs_dir);
  options.inference = request.inference;
  options.seed = request.seed;
  options.timeout_s = options_.capture_timeout_s;
  options.progress = sink(progress);
  STITCH_ASSIGN_OR_RETURN(harness::HarnessLocation location, harness::locate_harness());
  SystemProcessRunner runner;
  harness::PythonHarness torch_harness(location, runner);
  STITCH_ASSIGN_OR_RETURN(CapturedTask captured, capture_task(options, torch_harness));
  return mcp::CaptureReply{captured.run_dir, captured.graph.nodes.size(), captured.seconds,
                           ir::format_graph_summary(captured.graph)};
}

Result<mcp::VerifyReply> SystemStitchOps::verify(const mcp::VerifyRequest& request,
                                                 const mcp::ProgressReport& progress) {
  std::lock_guard lock(gpu_work_);
  VerifyProgramOptions options;
  options.target = request.target;
  options.programs = request.programs;
  options.include_dirs = request.include_dirs;
  options.track = request.track;
  options.runs_dir = runs_dir(request.runs_dir);
  options.profile = request.profile;
  if (request.sets) options.verify.sets = *request.sets;
  if (request.timing_iters) options.verify.timing_iters = *request.timing_iters;
  options.verify.baselines = request.baselines;
  options.verify.build_cache_dir = options_.build_cache_dir;
  options.insecure_sandbox = options_.insecure_sandbox;
  options.progress = sink(progress);
  auto say = options.progress;
  options.verify.on_step = [say](const VerifyStep& step) {
    say(fmt::format("{} {} ({:.2f} s){}", step.name, step.status, step.seconds,
                    step.detail.empty() ? "" : ": " + step.detail.substr(0, 160)));
  };
  STITCH_ASSIGN_OR_RETURN(VerifyProgramResult result, verify_program(options));
  return mcp::VerifyReply{std::move(result.report), std::move(result.feedback), result.attempt};
}

Result<mcp::ProfileReply> SystemStitchOps::profile(const mcp::ProfileProgramRequest& request,
                                                   const mcp::ProgressReport& progress) {
  std::lock_guard lock(gpu_work_);
  ProfileOptions options;
  options.target = request.target;
  options.program = request.program;
  options.reference = request.reference;
  options.top = request.top;
  options.no_ncu = request.no_ncu;
  options.track = request.track;
  options.runs_dir = runs_dir(request.runs_dir);
  options.build_cache = options_.build_cache_dir.string();
  options.progress = sink(progress);
  STITCH_ASSIGN_OR_RETURN(Profiled profiled, profile_target(options));
  return mcp::ProfileReply{std::move(profiled.document), profiled.written};
}

Result<json> SystemStitchOps::run_state(const fs::path& run_dir) {
  return read_run_overview(run_dir);
}

namespace {

json attempt_overview(const fs::path& attempt) {
  json entry = {
      {"attempt", attempt.string()}, {"state", nullptr}, {"outcome", nullptr}, {"reason", nullptr}};
  if (!fs::exists(attempt / "verify.json")) return entry;
  auto report = read_verify_report(attempt / "verify.json");
  if (!report.ok()) {
    entry["reason"] = report.error().message;
    return entry;
  }
  entry["state"] = enum_name(report->state);
  if (report->outcome) entry["outcome"] = enum_name(*report->outcome);
  entry["reason"] = report->reason;
  return entry;
}

}  // namespace

Result<json> read_run_overview(const fs::path& run_dir) {
  if (!fs::is_directory(run_dir) ||
      (!fs::exists(run_dir / "summary.json") && !fs::exists(run_dir / "graph.json")))
    return make_error(ErrorKind::bad_input,
                      "{}: not a run directory (no summary.json or graph.json)", run_dir.string());
  json overview = {{"run_dir", run_dir.string()}, {"state", nullptr}, {"summary", nullptr}};
  if (fs::exists(run_dir / "state.json")) {
    STITCH_ASSIGN_OR_RETURN(agents::RunState state, agents::load_run_state(run_dir));
    overview["state"] = agents::run_state_to_json(state);
  }
  if (fs::exists(run_dir / "summary.json")) {
    STITCH_ASSIGN_OR_RETURN(overview["summary"], read_json_file(run_dir / "summary.json"));
  }
  std::vector<fs::path> attempts;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(run_dir / "attempts", ec))
    if (entry.is_directory()) attempts.push_back(entry.path());
  std::sort(attempts.begin(), attempts.end());
  overview["attempts"] = json::array();
  for (const auto& attempt : attempts)
    overview["attempts"].push_back(attempt_overview(attempt));
  return overview;
}

RagDocsSearch::RagDocsSearch(std::filesystem::path index_path)
    : index_path_(std::move(index_path)) {}
RagDocsSearch::~RagDocsSearch() = default;

Result<std::vector<mcp::DocsHit>> RagDocsSearch::query(std::string_view query, int k) {
  std::lock_guard lock(mutex_);
  if (!index_) {
    STITCH_ASSIGN_OR_RETURN(index_, rag::open_index_for_search(index_path_));
  }
  STITCH_ASSIGN_OR_RETURN(std::vector<rag::DocHit> hits, rag::search(*index_, query, k));
  std::vector<mcp::DocsHit> answer;
  answer.reserve(hits.size());
  for (auto& hit : hits)
    answer.push_back(
        {std::move(hit.path), hit.line_begin, hit.line_end, hit.score, std::move(hit.text)});
  return answer;
}

}  // namespace stitch::app
