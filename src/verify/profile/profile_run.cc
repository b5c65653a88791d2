// The profiling pipeline: shapes from graph.json, the runner's traced forward, ncu per top kernel;
// see profile_run.h.
#include "verify/profile/profile_run.h"

#include <cstdlib>

#include <fmt/format.h>

#include "util/fs.h"
#include "util/json_fields.h"
#include "verify/judge/runner_client.h"
#include "verify/profile/profile_ncu.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Result<json> tensor_entry(const json& source, const std::string& where, bool with_distribution) {
  if (!source.is_object() || !source.contains("dtype") || !source["dtype"].is_string() ||
      !source.contains("shape") || !source["shape"].is_array())
    return make_error("{}: needs dtype and shape", where);
  json entry = {{"dtype", source["dtype"]}, {"shape", source["shape"]}};
  if (source.contains("name") && source["name"].is_string()) entry["name"] = source["name"];
  if (source.contains("strides") && source["strides"].is_array())
    entry["strides"] = source["strides"];
  if (with_distribution)
    entry["distribution"] = source.contains("distribution") && source["distribution"].is_string()
                                ? source["distribution"]
                                : json("randn");
  return entry;
}

Result<json> resolve_output(const json& graph, const json& reference, size_t index) {
  std::string where = fmt::format("outputs[{}]", index);
  if (!reference.is_object()) return make_error("{}: not a reference", where);
  if (reference.contains("input") && reference["input"].is_number_integer()) {
    size_t i = reference["input"].get<size_t>();
    if (i >= graph["inputs"].size()) return make_error("{}: input {} out of range", where, i);
    return tensor_entry(graph["inputs"][i], where, false);
  }
  if (reference.contains("param") && reference["param"].is_string()) {
    for (const json& param : graph["params"])
      if (param.is_object() && param.value("name", "") == reference["param"].get<std::string>())
        return tensor_entry(param, where, false);
    return make_error("{}: no param {}", where, reference["param"].dump());
  }
  if (!reference.contains("node") || !reference["node"].is_string())
    return make_error("{}: expected a node, input or param reference", where);
  std::string id = reference["node"].get<std::string>();
  size_t out = reference.contains("out") && reference["out"].is_number_integer()
                   ? reference["out"].get<size_t>()
                   : 0;
  for (const json& node : graph["nodes"]) {
    if (!node.is_object() || node.value("id", "") != id) continue;
    if (!node.contains("outputs") || !node["outputs"].is_array() || out >= node["outputs"].size())
      return make_error("{}: node {} has no output {}", where, id, out);
    return tensor_entry(node["outputs"][out], where, false);
  }
  return make_error("{}: no node {}", where, id);
}

Result<json> slots_from_graph(const json& graph) {
  if (!graph.is_object()) return make_error("graph.json: not a JSON object");
  for (const char* key : {"inputs", "params", "nodes", "outputs"})
    if (!graph.contains(key) || !graph[key].is_array())
      return make_error("graph.json: missing array \"{}\"", key);
  json slots = {{"version", 1},
                {"device", 0},
                {"params", json::array()},
                {"inputs", json::array()},
                {"outputs", json::array()}};
  for (size_t i = 0; i < graph["params"].size(); ++i) {
    STITCH_ASSIGN_OR_RETURN(json entry,
                            tensor_entry(graph["params"][i], fmt::format("params[{}]", i), false));
    slots["params"].push_back(std::move(entry));
  }
  for (size_t i = 0; i < graph["inputs"].size(); ++i) {
    STITCH_ASSIGN_OR_RETURN(json entry,
                            tensor_entry(graph["inputs"][i], fmt::format("inputs[{}]", i), true));
    slots["inputs"].push_back(std::move(entry));
  }
  for (size_t i = 0; i < graph["outputs"].size(); ++i) {
    STITCH_ASSIGN_OR_RETURN(json entry, resolve_output(graph, graph["outputs"][i], i));
    slots["outputs"].push_back(std::move(entry));
  }
  if (slots["outputs"].empty()) return make_error("graph.json: no outputs");
  // A training-mode program also returns its buffers' new values, after the outputs
  // (docs/graph-format.md, state_updates): one more output slot each.
  if (graph.contains("state_updates")) {
    if (!graph["state_updates"].is_array())
      return make_error("graph.json: \"state_updates\" is not an array");
    for (const json& update : graph["state_updates"]) {
      const size_t index = slots["outputs"].size();
      if (!update.is_object() || !update.contains("value"))
        return make_error("graph.json: state_updates[{}] has no value",
                          index - graph["outputs"].size());
      STITCH_ASSIGN_OR_RETURN(json entry, resolve_output(graph, update["value"], index));
      slots["outputs"].push_back(std::move(entry));
    }
  }
  return slots;
}

std::string tail(const std::string& text, size_t bytes) {
  return text.size() <= bytes ? text : "..." + text.substr(text.size() - bytes);
}

std::string seconds_text(double seconds) {
  return fmt::format("{}", seconds);
}

// The runner as ncu starts it: a short verification run without network namespace or seccomp.
std::vector<std::string> ncu_target(const ProfileRequest& request, const fs::path& result,
                                    const fs::path& sandbox) {
  std::vector<std::string> argv = {
      request.runner.string(), "--program", request.program.string(), "--self-test", "--result",
      result.string(), "--check-sets", "1", "--timing-iters", "0", "--warmup", "0", "--timing-sets",
      "1", "--rechecks", "0", "--launch-counting", "off", "--no-network-isolation", "--no-seccomp",
      "--under-profiler",
      "--work-dir", sandbox.string(),
      // Replay runs a kernel many times over: the runner's own limits
      // must not fire before ncu's.
      "--call-timeout-s", seconds_text(request.ncu_timeout_s), "--init-timeout-s",
      seconds_text(request.ncu_timeout_s)};
  if (!request.slots.empty()) {
    argv.push_back("--slots");
    argv.push_back(request.slots.string());
  }
  return argv;
}

// How ncu is run for the kernels still to profile: the metric set and output flags that worked so
// far (a smaller set after an unknown metric, plain flags for an older ncu) carry on to the next.
struct NcuSettings {
  fs::path ncu;
  size_t tier = 0;
  bool plain_output_flags = false;
};

// One ncu run: what it said, the process, and the first kernel's metrics when it profiled one.
struct NcuRun {
  NcuProblem problem = NcuProblem::failed;
  ProcessResult process;
  std::optional<NcuKernelResult> metrics;
};

Result<NcuRun> run_ncu_once(ProcessRunner& process_runner, const ProfileRequest& request,
                            const NcuSettings& settings, const ProfileKernel& kernel, size_t k) {
  NcuRequest ncu_request;
  ncu_request.ncu = settings.ncu;
  ncu_request.mangled_kernel_name = kernel.mangled_name;
  ncu_request.metrics = ncu_metric_tiers()[settings.tier];
  ncu_request.log_file = request.work_dir / fmt::format("ncu-{}-tier{}.csv", k, settings.tier);
  ncu_request.plain_output_flags = settings.plain_output_flags;
  ncu_request.target_argv =
      ncu_target(request, request.work_dir / fmt::format("ncu-{}-runner.json", k),
                 request.work_dir / "ncu-sandbox");
  std::error_code ignored;
  fs::remove(ncu_request.log_file, ignored);
  fs::create_directories(request.work_dir / "ncu-sandbox", ignored);
  ProcessSpec spec;
  spec.argv = ncu_argv(ncu_request);
  spec.cwd = request.work_dir;
  spec.timeout_s = request.ncu_timeout_s;
  STITCH_ASSIGN_OR_RETURN(ProcessResult process, process_runner.run(spec));
  auto log_file = read_file(ncu_request.log_file);
  std::string log = log_file.ok() ? *log_file : std::string();
  auto parsed = parse_ncu_csv(log);
  size_t kernels_parsed = parsed.ok() ? parsed->size() : 0;
  NcuRun run{classify_ncu_run(process, log, kernels_parsed), std::move(process), std::nullopt};
  if (run.problem == NcuProblem::none) run.metrics = parsed->front();
  return run;
}

// Whether ncu can profile no kernel here (no permission, no profiler support); if so, says why in
// report.ncu and the notes. Other trouble is the one kernel's.
bool ncu_unusable(const NcuRun& run, ProfileReport& report) {
  if (run.problem == NcuProblem::not_permitted) {
    report.ncu.detail = "hardware counters not permitted (ERR_NVGPUCTRPERM)";
    report.notes.push_back(report.ncu.detail + ": timeline only");
    return true;
  }
  if (run.problem == NcuProblem::profiler_unavailable ||
      run.problem == NcuProblem::unknown_option) {
    report.ncu.detail = fmt::format("ncu cannot profile here: {} ({}): {}",
                                    ncu_problem_name(run.problem), run.process.describe(),
                                    tail(run.process.stderr_text + run.process.stdout_text, 300));
    report.notes.push_back(report.ncu.detail + "; timeline only");
    return true;
  }
  return false;
}

// ncu over the top kernels; fills counters and report.ncu, adds notes. Never fails the profile.
void run_ncu(ProcessRunner& process_runner, const ProfileRequest& request, ProfileReport& report) {
  NcuSummary& summary = report.ncu;
  summary.attempted = true;
  std::optional<fs::path> ncu = request.ncu ? request.ncu : locate_ncu();
  if (!ncu) {
    summary.detail = "ncu not found (PATH, /usr/local/cuda/bin, /opt/nvidia/nsight-compute)";
    report.notes.push_back(summary.detail + ": kernels have timeline data only");
    return;
  }
  summary.path = ncu->string();
  NcuSettings settings{*ncu};
  const size_t tiers = ncu_metric_tiers().size();
  std::vector<std::string> problems;
  int tried = 0;
  for (size_t k = 0; k < report.kernels.size() && tried < request.top_kernels; ++k) {
    ProfileKernel& kernel = report.kernels[k];
    if (kernel.mangled_name.empty()) continue;
    ++tried;
    while (true) {
      auto run = run_ncu_once(process_runner, request, settings, kernel, k);
      if (!run) {
        summary.detail = "ncu could not be started: " + run.error().message;
        report.notes.push_back(summary.detail);
        return;
      }
      if (run->problem == NcuProblem::unknown_metric && settings.tier + 1 < tiers) {
        ++settings.tier;  // a smaller metric set; kept for the kernels after this one
        continue;
      }
      if (run->problem == NcuProblem::unknown_option && !settings.plain_output_flags) {
        settings.plain_output_flags = true;  // an older ncu: its default page and units
        continue;
      }
      if (run->problem == NcuProblem::none) {
        kernel.counters = counters_from_ncu(*run->metrics);
        ++summary.profiled;
        break;
      }
      if (ncu_unusable(*run, report)) return;
      problems.push_back(fmt::format("{}: {} ({})", kernel.name.substr(0, 80),
                                     ncu_problem_name(run->problem), run->process.describe()));
      break;
    }
  }
  summary.metrics = ncu_metric_tiers()[settings.tier];
  summary.detail = fmt::format("{} of {} kernels profiled", summary.profiled, tried);
  for (const std::string& problem : problems)
    report.notes.push_back("ncu: " + problem);
}

}  // namespace

Result<json> self_test_slots_from_graph(const json& graph) {
  return read_without_throwing("graph.json", [&] { return slots_from_graph(graph); });
}

std::optional<fs::path> locate_stitch_runner() {
  if (const char* explicit_path = std::getenv("STITCH_RUNNER"); explicit_path && *explicit_path)
    return fs::path(explicit_path);
  std::error_code error;
  fs::path dir = executable_dir();
  for (const fs::path& candidate : {dir / "stitch-runner", dir.parent_path() / "stitch-runner"})
    if (fs::is_regular_file(candidate, error)) return candidate;
  if (std::string found = find_in_path("stitch-runner"); !found.empty()) return fs::path(found);
  return std::nullopt;
}

Result<ProfileReport> profile_program(ProcessRunner& process_runner,
                                      const ProfileRequest& given) {
  // Absolute paths throughout: the runner starts in its own sandbox directory.
  ProfileRequest request = given;
  for (fs::path* path : {&request.runner, &request.program, &request.slots, &request.work_dir})
    if (!path->empty()) *path = fs::absolute(*path);
  STITCH_TRY(make_dirs(request.work_dir));
  fs::path timeline_path = request.work_dir / "timeline.json";
  std::error_code ignored;
  fs::remove(timeline_path, ignored);

  RunnerInvocation invocation;
  invocation.runner = request.runner;
  invocation.program = request.program;
  invocation.slots = request.slots;
  invocation.result = request.work_dir / "runner.json";
  invocation.work_dir = request.work_dir / "sandbox";
  invocation.self_test = true;
  invocation.timing_iters = 0;
  invocation.warmup = request.warmup;
  invocation.timing_sets = 1;
  invocation.timeout_s = request.runner_timeout_s;
  invocation.call_timeout_s = request.call_timeout_s;
  invocation.extra_args = {"--profile", timeline_path.string()};
  STITCH_TRY(make_dirs(invocation.work_dir));  // the runner starts in it
  auto process = process_runner.run(build_runner_spec(invocation, make_nonce()));
  if (!process) return process.error().with_context("starting stitch-runner");
  auto text = read_file(timeline_path);
  if (!text)
    return make_error("stitch-runner {} without writing a profile: {}", process->describe(),
                      tail(process->stderr_text, 400));
  json timeline = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (timeline.is_discarded()) return make_error("{}: not JSON", timeline_path.string());
  STITCH_ASSIGN_OR_RETURN(ProfileReport report, report_from_timeline(timeline));
  report.program = request.program.string();

  report.peaks = request.peaks ? request.peaks : peaks_for_device(report.device_name);
  if (!report.peaks)
    report.notes.push_back(
        fmt::format("no peak rates known for '{}': no roofline (give the "
                    "peaks with --peak-tflops and --peak-gbps)",
                    report.device_name));
  if (request.use_ncu && report.cupti_available) {
    run_ncu(process_runner, request, report);
  } else if (request.use_ncu) {
    report.notes.push_back(
        "ncu skipped: without a CUPTI timeline there are no kernel names to "
        "filter on");
  } else {
    report.ncu.detail = "not asked for (--no-ncu)";
  }
  report.nsys_checked = true;
  report.nsys_path = find_in_path("nsys");
  classify_report(report, request.rules);
  return report;
}

}  // namespace stitch
