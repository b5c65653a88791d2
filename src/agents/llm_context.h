// What the LLM roles' prompts are filled with (src/llm/prompts/*.md): the task's source, the
// program's interface (inputs, params and outputs with exact shapes, in ABI order), the captured
// graph, the target GPU's facts (util/gpu_peaks.h), the precision track's rules, the plan, the
// program ABI header, and the Verifier's feedback and profile — each rendered as Markdown text,
// then gathered into the values of one prompt. Builders take typed inputs (tests need no run
// directory); load_prompt_task reads them from a run directory.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "llm/prompt_template.h"
#include "plan/plan.h"
#include "util/gpu_peaks.h"
#include "util/result.h"
#include "verify/feedback.h"
#include "verify/track.h"

namespace stitch::agents {

// The facts every prompt about one task shares.
struct PromptTask {
  std::string task_source;  // task.py
  ir::Graph graph;
  const GpuPeakRow* gpu = nullptr;  // nullptr: the H200's row (the planner's default)
  std::string arch;                 // "sm_90"; empty: not known
  Track track = Track::fp32;
  std::optional<plan::Plan> plan;  // the built-in Planner's plan, when there is one
  std::string plan_text;           // else an LLM Planner's plan, described (llm_plan_file.h)
};

// task.py and graph.json of `run_dir`, and the plan of `plan_file` when it is given (a built-in
// plan, or an LLM Planner's: llm_plan_file.h).
Result<PromptTask> load_prompt_task(const std::filesystem::path& run_dir,
                                    const std::optional<std::filesystem::path>& plan_file,
                                    const GpuPeakRow* gpu, std::string arch, Track track);

// ---- Sections ----------------------------------------------------------------------------------

// Inputs, params and outputs, each with its position in the ABI's arrays, name, shape, dtype.
std::string describe_interface(const ir::Graph& graph);
// The GPU model, SMs, FP32/TF32 peaks, DRAM bandwidth and the nvcc target.
std::string describe_gpu(const GpuPeakRow* gpu, const std::string& arch);
// What the precision track allows and how outputs are compared.
std::string describe_precision(Track track);
// The plan's subtask table and each subtask's spec (plan/plan_print.h).
std::string describe_plan(const plan::Plan& plan);
// Feedback as a model reads it: outcome, compiler errors with snippets, wrong outputs with their
// error statistics, findings, timing against the baselines, kernels' resources, the suggestion.
std::string describe_feedback(const Feedback& feedback);
// The profile's kernels, slowest first, with their bottleneck and utilisation.
std::string describe_profile(const std::vector<ProfiledKernel>& kernels);

// ---- Prompt values
// -------------------------------------------------------------------------------

// The whole program, or one subtask of the plan (by index).
std::string describe_scope(const PromptTask& task, int subtask);

llm::PromptValues planner_values(const PromptTask& task,
                                 const std::optional<ProfileSummary>& reference_profile);
llm::PromptValues coder_generate_values(const PromptTask& task, int subtask);
llm::PromptValues coder_revise_values(const PromptTask& task, int subtask,
                                      const std::string& previous_program,
                                      const Feedback& feedback);
llm::PromptValues verifier_analysis_values(const PromptTask& task, const std::string& program,
                                           const Feedback& feedback);
llm::PromptValues replan_values(const PromptTask& task, const std::string& previous_plan,
                                const std::string& reason, const std::optional<Feedback>& feedback);

}  // namespace stitch::agents
