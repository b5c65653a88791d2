#include "mcp/stitch_tools.h"

#include <fmt/format.h>

#include "util/enum_names.h"
#include "verify/verdict.h"

namespace stitch::mcp {

using nlohmann::json;

namespace {

const json kTrack = {{"type", "string"},
                     {"enum", {"fp32", "tf32", "bf16"}},
                     {"description", "Precision track (default fp32: FP32 math, atol=rtol=1e-4)"}};
const json kRunsDir = {{"type", "string"},
                       {"description", "Where new run directories go (default: the server's)"}};
const json kTarget = {
    {"type", "string"},
    {"minLength", 1},
    {"description", "A task .py (captured first) or a run directory from capture_task"}};

json object_schema(json properties, json required) {
  return json{{"type", "object"},
              {"properties", std::move(properties)},
              {"required", std::move(required)},
              {"additionalProperties", false}};
}

std::unique_ptr<Tool> capture_tool(StitchOps& ops) {
  ToolSpec spec{
      "capture_task", "Capture a task",
      "Capture a KernelBench-style PyTorch task (class Model, get_inputs(), get_init_inputs()) "
      "into a run directory: graph.json (core ATen), weights.safetensors and reference outputs. "
      "Returns the run directory; pass it as `target` to verify_program and profile_program so "
      "the task is captured only once. Task files are trusted code: they run in Python.",
      object_schema(
          {{"task",
            {{"type", "string"}, {"minLength", 1}, {"description", "Path of the task .py file"}}},
           {"runs_dir", kRunsDir},
           {"inference",
            {{"type", "boolean"},
             {"description",
              "Capture in eval mode (default: training "
              "mode, as KernelBench builds models)"}}},
           {"seed", {{"type", "integer"}, {"minimum", 0}, {"maximum", 2147483647}}}},
          {"task"})};
  return std::make_unique<FunctionTool>(
      std::move(spec), [&ops](const json& args, const ProgressReport& progress) -> ToolOutput {
        CaptureRequest request;
        request.task = args["task"].get<std::string>();
        request.runs_dir = args.value("runs_dir", "");
        request.inference = args.value("inference", false);
        request.seed = args.value("seed", 42);
        auto reply = ops.capture(request, progress);
        if (!reply.ok()) return tool_error(reply.error().message);
        return ToolOutput{json{{"run_dir", reply->run_dir.string()},
                               {"graph_json", (reply->run_dir / "graph.json").string()},
                               {"nodes", reply->nodes},
                               {"seconds", reply->seconds},
                               {"graph_summary", reply->graph_summary}},
                          "", false};
      });
}

VerifyRequest verify_request_from(const json& args) {
  VerifyRequest request;
  request.target = args["target"].get<std::string>();
  if (args["program"].is_string())
    request.programs = {args["program"].get<std::string>()};
  else
    request.programs = args["program"].get<std::vector<std::string>>();
  request.include_dirs = args.value("include_dirs", std::vector<std::string>{});
  request.track = args.value("track", "fp32");
  request.runs_dir = args.value("runs_dir", "");
  if (args.contains("sets")) request.sets = args["sets"].get<int>();
  if (args.contains("timing_iters")) request.timing_iters = args["timing_iters"].get<int>();
  request.baselines = args.value("baselines", true);
  request.profile = args.value("profile", "");
  return request;
}

std::unique_ptr<Tool> verify_tool(StitchOps& ops) {
  ToolSpec spec{
      "verify_program", "Verify a program",
      "Build a CUDA program (the stitch C ABI: stitch_init / stitch_forward / stitch_destroy / "
      "stitch_last_error, include/stitch/program.h) and judge it against its task with the "
      "hardened verifier, exactly as `stitchcuda verify`: sandboxed nvcc, static hack checks, "
      "the program run in the sandboxed stitch-runner, outputs compared by a separate judge on "
      "secret inputs, timed against eager and torch.compile. Returns the outcome "
      "(compile_error, runtime_error, timeout, wrong, hacked, passed), the figures and feedback "
      "with one concrete suggestion. Without a GPU it builds and checks, state no_gpu.",
      object_schema(
          {{"target", kTarget},
           {"program",
            {{"type", {"string", "array"}},
             {"minLength", 1},
             {"minItems", 1},
             {"items", {{"type", "string"}, {"minLength", 1}}},
             {"description", "The program's .cu file (or several)"}}},
           {"include_dirs",
            {{"type", "array"},
             {"items", {{"type", "string"}}},
             {"description", "Folders of the program's own quoted #includes (checked too)"}}},
           {"track", kTrack},
           {"runs_dir", kRunsDir},
           {"sets",
            {{"type", "integer"},
             {"minimum", 1},
             {"maximum", 16},
             {"description", "Input sets checked (default: the verifier's)"}}},
           {"timing_iters", {{"type", "integer"}, {"minimum", 1}, {"maximum", 10000}}},
           {"baselines",
            {{"type", "boolean"},
             {"description", "Time eager / torch.compile baselines (default true)"}}},
           {"profile",
            {{"type", "string"},
             {"description", "A profile.json from profile_program for the feedback"}}}},
          {"target", "program"})};
  return std::make_unique<FunctionTool>(
      std::move(spec), [&ops](const json& args, const ProgressReport& progress) -> ToolOutput {
        auto reply = ops.verify(verify_request_from(args), progress);
        if (!reply.ok()) return tool_error(reply.error().message);
        return ToolOutput{verify_reply_to_json(*reply), "", false};
      });
}

std::unique_ptr<Tool> profile_tool(StitchOps& ops) {
  ToolSpec spec{
      "profile_program", "Profile a program",
      "Profile a program's kernels in the sandboxed runner (CUPTI timeline, ncu counters for the "
      "top kernels, each kernel's bottleneck: memory, compute or latency), or with "
      "reference=true the PyTorch reference under torch.profiler. Writes profile.json; pass its "
      "path as `profile` to verify_program to get profile-guided feedback. Needs a GPU.",
      object_schema(
          {{"target", kTarget},
           {"program",
            {{"type", "string"},
             {"minLength", 1},
             {"description", "The program's .cu (omit with reference)"}}},
           {"reference", {{"type", "boolean"}}},
           {"top",
            {{"type", "integer"},
             {"minimum", 1},
             {"maximum", 20},
             {"description", "Kernels given ncu counters (default 3)"}}},
           {"no_ncu", {{"type", "boolean"}, {"description", "Timeline only, no ncu counters"}}},
           {"track", kTrack},
           {"runs_dir", kRunsDir}},
          {"target"})};
  return std::make_unique<FunctionTool>(
      std::move(spec), [&ops](const json& args, const ProgressReport& progress) -> ToolOutput {
        ProfileProgramRequest request;
        request.target = args["target"].get<std::string>();
        request.program = args.value("program", "");
        request.reference = args.value("reference", false);
        if (request.program.empty() == !request.reference)
          return tool_error("give `program` (a .cu) or `reference: true`, exactly one");
        request.top = args.value("top", 3);
        request.no_ncu = args.value("no_ncu", false);
        request.track = args.value("track", "fp32");
        request.runs_dir = args.value("runs_dir", "");
        auto reply = ops.profile(request, progress);
        if (!reply.ok()) return tool_error(reply.error().message);
        return ToolOutput{
            json{{"profile_json", reply->written.string()}, {"profile", reply->document}}, "",
            false};
      });
}

std::string format_hits(const std::vector<DocsHit>& hits) {
  if (hits.empty()) return "no passage matched";
  std::string text;
  for (const auto& hit : hits)
    text += fmt::format("[{}:{}-{}] (score {:.3f})\n{}\n\n", hit.path, hit.line_begin, hit.line_end,
                        hit.score, hit.text);
  return text;
}

std::unique_ptr<Tool> docs_tool(DocsSearch* docs) {
  ToolSpec spec{
      "query_docs", "Query the CUDA documentation",
      "Search the indexed CUDA documentation and headers (runtime, cuBLAS/cuBLASLt, cuDNN, "
      "CUPTI, cuRAND, the project's kernels/) for current API names, signatures, enum values "
      "and limits. Each hit cites path:lines. Use it after a compile error naming an unknown "
      "identifier instead of guessing.",
      object_schema({{"query", {{"type", "string"}, {"minLength", 1}, {"maxLength", 2000}}},
                     {"k",
                      {{"type", "integer"},
                       {"minimum", 1},
                       {"maximum", 50},
                       {"description", "How many passages (default 5)"}}}},
                    {"query"})};
  return std::make_unique<FunctionTool>(
      std::move(spec), [docs](const json& args, const ProgressReport&) -> ToolOutput {
        if (!docs)
          return tool_error(
              "no documentation index is available to this server: build one with "
              "`stitchcuda rag index` and restart `stitchcuda mcp`");
        auto hits = docs->query(args["query"].get<std::string>(), args.value("k", 5));
        if (!hits.ok()) return tool_error(hits.error().message);
        json list = json::array();
        for (const auto& hit : *hits)
          list.push_back(
              {{"path", hit.path},
               {"line_begin", hit.line_begin},
               {"line_end", hit.line_end},
               {"citation", fmt::format("{}:{}-{}", hit.path, hit.line_begin, hit.line_end)},
               {"score", hit.score},
               {"text", hit.text}});
        return ToolOutput{json{{"hits", list}}, format_hits(*hits), false};
      });
}

std::unique_ptr<Tool> run_state_tool(StitchOps& ops) {
  ToolSpec spec{
      "read_run_state", "Read a run's state",
      "Read a run directory (from capture_task, verify_program or `stitchcuda run`): the loop's "
      "state.json when there is one (plan, subtasks, attempts, best), summary.json, and each "
      "attempt's outcome and reason.",
      object_schema({{"run_dir", {{"type", "string"}, {"minLength", 1}}}}, {"run_dir"})};
  return std::make_unique<FunctionTool>(
      std::move(spec), [&ops](const json& args, const ProgressReport&) -> ToolOutput {
        auto state = ops.run_state(args["run_dir"].get<std::string>());
        if (!state.ok()) return tool_error(state.error().message);
        return ToolOutput{*state, "", false};
      });
}

}  // namespace

json verify_reply_to_json(const VerifyReply& reply) {
  const VerifyReport& report = reply.report;
  json speedups = json::object();
  for (const auto& speedup : report.speedups)
    speedups[speedup.mode] = speedup.speedup;
  json time_ms = nullptr;
  if (const auto& timing = report.reported_timing()) time_ms = timing->median_ms;
  return json{{"state", enum_name(report.state)},
              {"outcome", report.outcome ? json(enum_name(*report.outcome)) : json()},
              {"passed", report.passed()},
              {"reason", report.reason},
              {"summary", report.summary},
              {"time_ms", time_ms},
              {"speedups", speedups},
              {"attempt", reply.attempt.string()},
              {"verify_json", (reply.attempt / "verify.json").string()},
              {"feedback_json", (reply.attempt / "feedback.json").string()},
              {"feedback", feedback_to_json(reply.feedback)}};
}

std::vector<std::unique_ptr<Tool>> make_stitch_tools(StitchOps& ops, DocsSearch* docs) {
  std::vector<std::unique_ptr<Tool>> tools;
  tools.push_back(capture_tool(ops));
  tools.push_back(verify_tool(ops));
  tools.push_back(profile_tool(ops));
  tools.push_back(docs_tool(docs));
  tools.push_back(run_state_tool(ops));
  return tools;
}

}  // namespace stitch::mcp
