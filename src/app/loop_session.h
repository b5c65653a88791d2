// One task through the loop with the configured roles (built-in or LLM) and the real Verifier:
// shared by `run` (one task, live progress) and `bench` (many tasks, one worker per GPU). Wires the
// roles (agents/builtin_roles.h, agents/system_roles.h), drives the engine (agents/workflow.h),
// exports the best program with its adapters (agents/export_best.h) and keeps summary.json current.
// The roles and the export are interfaces (LoopDeps); tests give fakes.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agents/export_best.h"
#include "agents/llm_coder.h"
#include "agents/routing.h"
#include "agents/run_state.h"
#include "agents/workflow.h"
#include "harness/harness.h"
#include "llm/config.h"
#include "run/run_dir.h"
#include "sandbox/layers.h"
#include "util/result.h"
#include "verify/track.h"

namespace stitch::app {

struct LoopSettings {
  agents::Budgets budgets;
  Track track = Track::fp32;
  std::string arch;               // empty: the GPU's, else sm_90
  bool strict_fp32_gemm = false;  // the first plan already without 3xTF32
  int sets = 3;
  int iters = 50;
  double runner_timeout_s = 120;
  sandbox::InsecureLayers insecure_sandbox;
  std::filesystem::path build_cache;  // empty: no cache
  std::string worker_id = "gpu0";
  bool export_main = true;  // build best/main (the standalone adapter)
  llm::LlmConfig llm;       // which roles are LLM roles, and how their LLMs are reached
  int hybrid_hot = 1;       // --coder hybrid: built-in subtasks the LLM rewrites by profile
  agents::ChatClientFactory chat_clients;  // empty: the HTTP client (app/chat_clients.h)
};

// The loop's options as `run` and `bench` take them (bench: per task), before they are checked.
// The values a command puts here before declaring them (cli/loop_options.h) are its defaults.
struct LoopOptions {
  std::string track = "fp32";
  std::string arch;
  int max_attempts = 24;
  double max_minutes = 60;
  int max_replans = 3;
  int refine_attempts = 8;
  bool no_refine = false;
  bool strict_fp32_gemm = false;
  int sets = 3;
  int iters = 50;
  double timeout_s = 120;
  llm::LlmFlags llm;  // over the config file (llm/config.h)
  int hybrid_hot = 1;  // --hybrid-hot
  std::vector<std::string> insecure_sandbox;  // --insecure-sandbox (sandbox/layers.h names)
};

// The settings they make; a bad_input Error for an unknown track, a bad LLM configuration (the
// config file is looked up in the working directory), an LLM role the loop cannot run yet (the
// hybrid Coder) or an LLM Planner with the built-in Coder. An LLM Coder runs without refine (the
// built-in refine's variants are the built-in Coder's knobs).
Result<LoopSettings> loop_settings(const LoopOptions& options);
// The same options as command-line arguments (for bench's worker processes).
std::vector<std::string> loop_arguments(const LoopOptions& options);

struct LoopOutcome {
  agents::RunState state;
  std::optional<std::filesystem::path> best_dir;  // best/, when a program passed
  std::string export_note;                        // what exporting did or why it failed
};

// What one loop runs on: its roles, whether a GPU is here, and how best/ is exported.
struct LoopDeps {
  agents::WorkflowDeps roles;
  bool gpu = false;  // a run that ended no_gpu is taken up again when resumed where a GPU is
  std::function<Result<agents::BestExport>(const agents::RunState&)> export_best;
};

// Starts (resume = false) or resumes the loop on `run` with `deps`: summary.json says running, then
// how it ended (with the best time and what was exported); an Error only when the engine could
// not go on (the failed status says why).
Result<LoopOutcome> run_loop(run::RunDir& run, const LoopDeps& deps, const agents::Budgets& budgets,
                             bool resume,
                             std::function<void(const agents::WorkflowEvent&)> on_event);

// The same with the configured roles (settings.llm: the built-in ones, or the LLM Planner, Coder
// and the Verifier's LLM analysis over the real Verifier) and the real Verifier, profiler and
// export on GPU 0. summary.json and usage.json get the LLM roles' tokens and cost per role.
// `on_event` sees every loop step; `on_verify_step` every verification step (for a live view).
Result<LoopOutcome> run_loop(run::RunDir& run, const LoopSettings& settings, bool resume,
                             const harness::HarnessLocation& harness,
                             std::function<void(const agents::WorkflowEvent&)> on_event,
                             std::function<void(const std::string&)> on_verify_step = {});

// The best attempt's median and its speedups, for summaries: {"best_ms", "speedups": {mode: x}}.
nlohmann::json best_summary(const agents::RunState& state);

}  // namespace stitch::app
