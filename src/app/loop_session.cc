// One task through the loop (loop_session.h).
#include "app/loop_session.h"

#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "agents/builtin_roles.h"
#include "agents/export_best.h"
#include "agents/hybrid_coder.h"
#include "agents/llm_planner.h"
#include "agents/llm_usage.h"
#include "agents/llm_verifier.h"
#include "agents/refine.h"
#include "agents/system_roles.h"
#include "app/chat_clients.h"
#include "app/doc_declarations.h"
#include "app/planner_options.h"
#include "app/subtask_checker.h"
#include "app/verify.h"
#include "util/fs.h"
#include "util/gpu_peaks.h"
#include "verify/build/gpu_info.h"
#include "verify/profile/profile_run.h"

namespace stitch::app {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The LLM roles this loop can run: Planner, Coder (whole program or hybrid) and the Verifier's
// analysis. The built-in and hybrid Coders implement only the built-in Planner's plans.
Status check_runnable_roles(const llm::LlmConfig& config) {
  using llm::LoopRole;
  if (config.role(LoopRole::planner).uses_llm() &&
      config.role(LoopRole::coder).kind != llm::RoleKind::llm)
    return make_error(ErrorKind::bad_input,
                      "--planner llm needs --coder llm: the built-in Coder implements only the "
                      "built-in Planner's plans (its kernel-library subtasks), not an LLM's plan, "
                      "and the hybrid Coder starts from the built-in plan");
  return {};
}

}  // namespace

Result<LoopSettings> loop_settings(const LoopOptions& options) {
  STITCH_ASSIGN_OR_RETURN(Track track, track_from_option(options.track));
  LoopSettings settings;
  settings.budgets.max_attempts = options.max_attempts;
  settings.budgets.max_wall_s = options.max_minutes * 60;
  settings.budgets.max_replans = options.max_replans;
  settings.budgets.refine = !options.no_refine;
  settings.budgets.max_refine_attempts = options.refine_attempts;
  settings.track = track;
  settings.arch = options.arch;
  settings.strict_fp32_gemm = options.strict_fp32_gemm;
  settings.sets = options.sets;
  settings.iters = options.iters;
  settings.runner_timeout_s = options.timeout_s;
  STITCH_ASSIGN_OR_RETURN(settings.insecure_sandbox,
                          sandbox::parse_insecure_layers(options.insecure_sandbox));
  settings.hybrid_hot = options.hybrid_hot;
  STITCH_ASSIGN_OR_RETURN(settings.llm, llm::resolve_llm_config(options.llm, fs::current_path()));
  STITCH_TRY(check_runnable_roles(settings.llm));
  if (settings.llm.role(llm::LoopRole::coder).uses_llm()) settings.budgets.refine = false;
  return settings;
}

std::vector<std::string> loop_arguments(const LoopOptions& options) {
  std::vector<std::string> args = {"--track",
                                   options.track,
                                   "--max-attempts",
                                   std::to_string(options.max_attempts),
                                   "--max-minutes",
                                   fmt::format("{}", options.max_minutes),
                                   "--max-replans",
                                   std::to_string(options.max_replans),
                                   "--refine-attempts",
                                   std::to_string(options.refine_attempts),
                                   "--sets",
                                   std::to_string(options.sets),
                                   "--iters",
                                   std::to_string(options.iters),
                                   "--timeout",
                                   fmt::format("{}", options.timeout_s)};
  if (!options.arch.empty()) args.insert(args.end(), {"--arch", options.arch});
  if (options.no_refine) args.push_back("--no-refine");
  if (options.strict_fp32_gemm) args.push_back("--strict-fp32-gemm");
  if (options.hybrid_hot != LoopOptions{}.hybrid_hot)
    args.insert(args.end(), {"--hybrid-hot", std::to_string(options.hybrid_hot)});
  for (std::string& arg : llm::llm_flag_arguments(options.llm, fs::current_path()))
    args.push_back(std::move(arg));
  return args;
}

json best_summary(const agents::RunState& state) {
  json summary = {{"end", agents::run_end_name(state.end)},
                  {"end_reason", state.end_reason},
                  {"attempts", state.used.attempts},
                  {"wall_s", state.used.wall_s}};
  const agents::AttemptRecord* best = state.best();
  if (best == nullptr || !best->result || !best->result->timing) return summary;
  summary["best_attempt"] = best->number;
  summary["best_ms"] = best->result->timing->median_ms;
  json speedups = json::object();
  for (const auto& [mode, ms] : best->result->baselines_ms)
    speedups[mode] = ms / best->result->timing->median_ms;
  summary["speedups"] = speedups;
  if (state.refine.before_ms) summary["before_refine_ms"] = *state.refine.before_ms;
  return summary;
}

namespace {

// The Verifier's configuration for the loop; `last_finished` keeps the live view's last step.
Result<agents::SystemVerifierConfig> verifier_config(
    run::RunDir& run, const LoopSettings& settings, const harness::HarnessLocation& harness,
    const std::optional<GpuInfo>& gpu, std::function<void(const std::string&)> on_verify_step) {
  agents::SystemVerifierConfig config;
  config.python = {harness.python, harness.python_dir};
  config.track = settings.track;
  config.arch = settings.arch;
  config.gpu = gpu;
  auto runner_path = locate_stitch_runner();
  if (!runner_path)
    return make_error(ErrorKind::machine,
                      "stitch-runner not found (set STITCH_RUNNER or build it)");
  config.options.runner_path = *runner_path;
  config.options.sets = settings.sets;
  config.options.timing_iters = settings.iters;
  config.options.runner_timeout_s = settings.runner_timeout_s;
  config.options.insecure_sandbox = settings.insecure_sandbox;
  config.options.build_cache_dir = settings.build_cache;
  config.options.worker_id = settings.worker_id;
  run::EventLog* events = &run.events();
  config.declarations =
      std::make_shared<IndexDeclarationSource>(fs::path(), [events](const std::string& note) {
        (void)events->append("verify.declarations", {{"note", note}});
      });
  // The live view: the step running now, and the last one finished.
  auto last_finished = std::make_shared<std::string>();
  config.options.on_step_start = [=](const std::string& name) {
    if (!on_verify_step) return;
    if (name == "build") last_finished->clear();  // a new verification's first step
    on_verify_step(last_finished->empty()
                       ? fmt::format("verify: {}…", name)
                       : fmt::format("verify: {}… (after {})", name, *last_finished));
  };
  config.options.on_step = [=](const VerifyStep& step) {
    log_verify_step(*events, step);
    *last_finished = fmt::format("{} {:.1f} s {}", step.name, step.seconds, step.status);
    if (on_verify_step) on_verify_step("verify: " + *last_finished);
  };
  return config;
}

// The facts every LLM role's prompt quotes about the target.
template <class Options>
Options llm_role_options(const LoopSettings& settings, llm::LoopRole which,
                         const std::optional<GpuInfo>& gpu) {
  Options options;
  options.role = settings.llm.role(which);
  options.prices = settings.llm.prices;
  options.gpu = gpu ? find_gpu_peaks(gpu->name) : nullptr;
  options.arch = !settings.arch.empty() ? settings.arch : gpu ? gpu->arch() : "";
  options.track = settings.track;
  return options;
}

agents::ChatClientFactory chat_clients(const LoopSettings& settings) {
  return settings.chat_clients ? settings.chat_clients : default_chat_client_factory();
}

// The Planner the settings name: the built-in one (for the hybrid Coder keeping the ops it does
// not cover as opaque subtasks, which the LLM writes), or the LLM Planner.
std::unique_ptr<agents::Planner> make_planner(const LoopSettings& settings,
                                              const std::optional<GpuInfo>& gpu) {
  if (!settings.llm.role(llm::LoopRole::planner).uses_llm()) {
    plan::PlanOptions options =
        planner_options({settings.track, settings.strict_fp32_gemm, ""}, gpu);
    options.keep_uncovered = settings.llm.role(llm::LoopRole::coder).kind == llm::RoleKind::hybrid;
    return std::make_unique<agents::BuiltinPlanner>(options);
  }
  return std::make_unique<agents::LlmPlanner>(
      llm_role_options<agents::LlmPlannerOptions>(settings, llm::LoopRole::planner, gpu),
      chat_clients(settings));
}

// The run's LLM usage per role and model: usage.json, and the summary's "llm_usage".
void record_llm_usage(run::RunDir& run, json& summary) {
  llm::UsageLedger ledger;
  if (Status added = agents::add_run_llm_usage(run.root(), ledger); !added.ok()) {
    summary["llm_usage_error"] = added.error().message;
    return;
  }
  if (ledger.lines().empty()) return;
  (void)llm::write_usage_ledger(run.root() / "usage.json", ledger);
  summary["llm_usage"] = llm::ledger_to_json(ledger);
}

// The Coder the settings name: the built-in one, or the LLM Coder on its configured endpoint
// (whole-program, or hybrid with `checker` checking its subtasks alone).
std::unique_ptr<agents::Coder> make_coder(const LoopSettings& settings,
                                          const std::optional<GpuInfo>& gpu,
                                          const std::vector<fs::path>& include_dirs,
                                          agents::SubtaskChecker* checker) {
  const llm::RoleConfig& role = settings.llm.role(llm::LoopRole::coder);
  if (!role.uses_llm()) return std::make_unique<agents::BuiltinCoder>(include_dirs);
  auto options = llm_role_options<agents::LlmCoderOptions>(settings, llm::LoopRole::coder, gpu);
  options.include_dirs = include_dirs;
  options.search_docs = documentation_search();
  if (role.kind == llm::RoleKind::hybrid)
    return std::make_unique<agents::HybridCoder>(
        agents::HybridCoderOptions{std::move(options), settings.hybrid_hot, include_dirs},
        chat_clients(settings), checker);
  return std::make_unique<agents::LlmCoder>(std::move(options), chat_clients(settings));
}

// Exports best/ of a succeeded run and settles summary.json.
LoopOutcome finish_loop(run::RunDir& run, const agents::RunState& state, const LoopDeps& deps) {
  LoopOutcome outcome{state, std::nullopt, ""};
  if (state.end == agents::RunEnd::succeeded) {
    auto exported = deps.export_best(state);
    if (exported.ok()) {
      outcome.best_dir = exported->dir;
      outcome.export_note = exported->note;
    } else {
      outcome.export_note = "exporting best/ failed: " + exported.error().message;
    }
    (void)run.events().append("loop.export", {{"note", outcome.export_note}});
  }
  json summary = best_summary(state);
  summary["stage"] = "loop";
  record_llm_usage(run, summary);
  // Which subtask came from whom (the hybrid Coder's record of the best attempt, else the last).
  const agents::AttemptRecord* shown = state.best();
  if (shown == nullptr && !state.attempts.empty()) shown = &state.attempts.back();
  if (shown != nullptr)
    for (const auto& [id, from] : agents::read_subtask_sources(run.root() / shown->dir))
      summary["subtasks_from"][id] = from;
  if (!outcome.export_note.empty()) summary["export"] = outcome.export_note;
  const bool infrastructure = state.end == agents::RunEnd::infrastructure_error;
  (void)run.set_status(infrastructure ? run::RunStatus::failed : run::RunStatus::complete, summary);
  return outcome;
}

}  // namespace

Result<LoopOutcome> run_loop(run::RunDir& run, const LoopDeps& deps, const agents::Budgets& budgets,
                             bool resume,
                             std::function<void(const agents::WorkflowEvent&)> on_event) {
  agents::WorkflowOptions options;
  options.budgets = budgets;
  options.on_event = std::move(on_event);
  options.reopen_no_gpu = deps.gpu;
  agents::Workflow workflow(run, deps.roles, options);

  (void)run.set_status(run::RunStatus::running, {{"stage", "loop"}});
  Result<agents::RunState> state = resume ? workflow.resume() : workflow.start(run.task_name());
  if (!state.ok()) {
    (void)run.set_status(run::RunStatus::failed,
                         {{"stage", "loop"}, {"error", state.error().message}});
    return state.error();
  }
  return finish_loop(run, *state, deps);
}

Result<LoopOutcome> run_loop(run::RunDir& run, const LoopSettings& settings, bool resume,
                             const harness::HarnessLocation& harness,
                             std::function<void(const agents::WorkflowEvent&)> on_event,
                             std::function<void(const std::string&)> on_verify_step) {
  const std::optional<GpuInfo> gpu = query_gpu(0);
  STITCH_ASSIGN_OR_RETURN(agents::SystemVerifierConfig config,
                          verifier_config(run, settings, harness, gpu, std::move(on_verify_step)));
  const fs::path runner_path = config.options.runner_path;
  agents::SystemCandidateVerifier verifier(config);
  const std::vector<fs::path> include_dirs = verifier.compiler_include_dirs();
  const std::unique_ptr<agents::Planner> planner = make_planner(settings, gpu);
  // A hybrid fragment checked alone: the same hardened checks; its speed against PyTorch does not
  // count.
  agents::SystemVerifierConfig alone_config = config;
  alone_config.options.baselines = false;
  agents::SystemCandidateVerifier alone_verifier(alone_config);
  SystemSubtaskChecker checker(alone_verifier, harness);
  const bool hybrid = settings.llm.role(llm::LoopRole::coder).kind == llm::RoleKind::hybrid;
  const std::unique_ptr<agents::Coder> coder =
      make_coder(settings, gpu, include_dirs, hybrid ? &checker : nullptr);
  std::optional<agents::LlmAnalysingVerifier> analysing;
  if (settings.llm.role(llm::LoopRole::verifier).uses_llm()) {
    auto options =
        llm_role_options<agents::LlmVerifierOptions>(settings, llm::LoopRole::verifier, gpu);
    options.search_docs = documentation_search();
    analysing.emplace(verifier, std::move(options), chat_clients(settings));
  }
  if (std::any_of(settings.llm.roles.begin(), settings.llm.roles.end(),
                  [](const llm::RoleConfig& role) { return role.uses_llm(); }))
    (void)run.events().append("loop.llm_config", llm::llm_config_to_json(settings.llm));
  agents::SystemProgramProfiler profiler(runner_path);
  agents::BuiltinRefinePolicy refiner;
  SystemProcessRunner process_runner;
  agents::CandidateVerifier& loop_verifier =
      analysing ? static_cast<agents::CandidateVerifier&>(*analysing) : verifier;
  LoopDeps deps{{*planner, *coder, loop_verifier, gpu ? &profiler : nullptr, &refiner},
                gpu.has_value(),
                [&](const agents::RunState& state) {
                  return agents::export_best_attempt(run.root(), state, include_dirs,
                                                     settings.export_main, process_runner);
                }};
  return run_loop(run, deps, settings.budgets, resume, std::move(on_event));
}

}  // namespace stitch::app
