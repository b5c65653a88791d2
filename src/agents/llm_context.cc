// What the LLM roles' prompts are filled with (llm_context.h).
#include "agents/llm_context.h"

#include <fmt/format.h>

#include "agents/llm_plan_file.h"
#include "ir/print.h"
#include "llm/answers.h"
#include "llm/prompt_files.h"
#include "plan/plan_json.h"
#include "plan/plan_print.h"
#include "util/fs.h"

namespace stitch::agents {
namespace fs = std::filesystem;

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string tensor_line(size_t index, const std::string& name, const ir::TensorType& type,
                        const std::string& note) {
  return fmt::format("| {} | `{}` | {} | {} | {} |\n", index, name, shape_text(type.shape),
                     ir::dtype_name(type.dtype), note);
}

constexpr std::string_view kTableHead =
    "| # | name | shape | dtype | note |\n|---|---|---|---|---|\n";

// A schema on one line: the model reads it as well, for a fraction of the tokens.
std::string schema_text(const nlohmann::json& schema) {
  return schema.dump();
}

// Every value without its trailing newlines: the templates place each value on its own lines.
llm::PromptValues trimmed(llm::PromptValues values) {
  for (auto& [name, value] : values)
    while (value.ends_with('\n'))
      value.pop_back();
  return values;
}

std::string program_abi_header() {
  std::optional<std::string_view> header = llm::embedded_file("stitch/program.h");
  return header ? std::string(*header) : std::string("/* stitch/program.h is not embedded */");
}

llm::PromptValues shared_values(const PromptTask& task) {
  return {{"task_source", task.task_source},
          {"interface", describe_interface(task.graph)},
          {"gpu_facts", describe_gpu(task.gpu, task.arch)},
          {"precision", describe_precision(task.track)}};
}

std::string plan_or_none(const PromptTask& task) {
  if (!task.plan && !task.plan_text.empty()) return task.plan_text;
  if (!task.plan)
    return "No plan is given: decide the kernels yourself, following the steps a Planner would "
           "(fusion, intermediate buffers, library choice, host strategy).";
  return describe_plan(*task.plan);
}

}  // namespace

Result<PromptTask> load_prompt_task(const fs::path& run_dir,
                                    const std::optional<fs::path>& plan_file, const GpuPeakRow* gpu,
                                    std::string arch, Track track) {
  PromptTask task;
  STITCH_ASSIGN_OR_RETURN(task.task_source, read_file(run_dir / "task.py"));
  STITCH_ASSIGN_OR_RETURN(task.graph, ir::load_graph((run_dir / "graph.json").string()));
  if (plan_file) {
    STITCH_ASSIGN_OR_RETURN(std::optional<llm::LlmPlan> llm_plan, read_llm_plan_file(*plan_file));
    if (llm_plan) {
      task.plan_text = describe_llm_plan(*llm_plan);
    } else {
      STITCH_ASSIGN_OR_RETURN(plan::Plan plan, plan::load_plan(plan_file->string()));
      task.plan = std::move(plan);
    }
  }
  task.gpu = gpu;
  task.arch = std::move(arch);
  task.track = track;
  return task;
}

std::string describe_interface(const ir::Graph& graph) {
  std::string text = "Inputs (`stitch_forward`'s `inputs`, in this order):\n\n";
  text += kTableHead;
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const ir::Input& input = graph.inputs[i];
    const std::string note = input.kind == ir::InputKind::random
                                 ? "random values the reference drew inside forward (" +
                                       input.source_op + "): use them as given"
                                 : input.distribution;
    text += tensor_line(i, input.name, input.type, note);
  }
  text += "\nParams (`stitch_init`'s `params`, in this order; on the device, contiguous):\n\n";
  text += kTableHead;
  for (size_t i = 0; i < graph.params.size(); ++i)
    text += tensor_line(i, graph.params[i].name, graph.params[i].type,
                        std::string(ir::param_kind_name(graph.params[i].kind)));
  text += "\nOutputs (`stitch_forward`'s `outputs`, in this order; caller-owned, contiguous):\n\n";
  text += kTableHead;
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const size_t state = i - graph.user_output_count();  // wraps for the user outputs
    const std::string note =
        i < graph.user_output_count()
            ? ""
            : "buffer " + graph.state_params[state] +
                  " after this call; also keep it as that buffer's value for the next call";
    text += tensor_line(i, graph.name_of(graph.outputs[i]), graph.type_of(graph.outputs[i]), note);
  }
  if (graph.training)
    text += "\nThe reference runs in training mode (e.g. BatchNorm uses the batch's statistics).\n";
  return text;
}

std::string describe_gpu(const GpuPeakRow* gpu, const std::string& arch) {
  const GpuPeakRow& row = gpu ? *gpu : h200_peak_row();
  return fmt::format(
      "- GPU: {} ({} SMs)\n- FP32 (CUDA cores): {:g} TFLOP/s\n- TF32 tensor cores (dense): {:g} "
      "TFLOP/s\n- DRAM bandwidth: {:g} GB/s\n- nvcc target: {}\n- Ridge point: about {:.0f} FP32 "
      "FLOP per DRAM byte (below it a kernel is memory-bound)\n",
      row.model, row.sms, row.fp32_tflops, row.tf32_tflops, row.dram_gbps,
      arch.empty() ? "the GPU's own (sm_90 for an H200)" : arch,
      row.dram_gbps > 0 ? row.fp32_tflops * 1e3 / row.dram_gbps : 0.0);
}

std::string describe_precision(Track track) {
  const Tolerance tolerance = track_tolerance(track);
  const std::string compare = fmt::format(
      "Outputs are compared with the reference by allclose (atol = {:g}, rtol = {:g}); NaN or Inf "
      "never passes.",
      tolerance.atol, tolerance.rtol);
  switch (track) {
    case Track::fp32:
      return "Track fp32: compute in FP32 arithmetic. No TF32, FP16 or BF16 math on FP32 data "
             "(cuBLAS/cuBLASLt with CUBLAS_COMPUTE_32F and no TF32 math mode; no half/bf16 "
             "conversions). A split-precision 3xTF32 scheme is accepted only when its error stays "
             "at FP32 level: the relative error norm is checked as well. " +
             compare;
    case Track::tf32:
      return "Track tf32: TF32 tensor-core math is allowed on FP32 data; FP16/BF16 math is not. " +
             compare;
    case Track::bf16:
      return "Track bf16: TF32, FP16 and BF16 math are allowed; inputs and outputs stay FP32. " +
             compare;
  }
  return compare;
}

std::string describe_plan(const plan::Plan& plan) {
  return "The built-in Planner's plan: its subtasks in execution order (kernel-library entry, "
         "tunables, roofline floor, bound), then each subtask's specification.\n\n```text\n" +
         plan::format_plan(plan) + "\n" + plan::format_plan_details(plan) + "```";
}

std::string describe_profile(const std::vector<ProfiledKernel>& kernels) {
  if (kernels.empty()) return "(No profile was taken.)";
  std::string text =
      "| kernel | ms | bottleneck | DRAM % of peak | SM % of peak |\n|---|---|---|---|---|\n";
  auto pct = [](const std::optional<double>& value) {
    return value ? fmt::format("{:.0f}", *value) : std::string("—");
  };
  for (const ProfiledKernel& kernel : kernels)
    text += fmt::format("| `{}` | {:.4f} | {} | {} | {} |\n", kernel.name, kernel.duration_ms,
                        kernel.bottleneck.empty() ? "—" : kernel.bottleneck, pct(kernel.dram_pct),
                        pct(kernel.sm_pct));
  return text;
}

namespace {

void add_compile_errors(std::string& text, const Feedback& feedback) {
  if (feedback.compile_errors.empty()) return;
  text += "\n## Compiler errors (first few)\n";
  for (const Diagnostic& error : feedback.compile_errors) {
    text += fmt::format("\n- {}:{}: {}\n", error.file, error.line, error.message);
    if (!error.snippet.empty()) text += "\n```\n" + error.snippet + "\n```\n";
  }
}

void add_declarations(std::string& text, const Feedback& feedback) {
  if (feedback.declarations.empty()) return;
  text += "\n## Declarations the errors are about (from the documentation index)\n";
  for (const DeclarationNote& note : feedback.declarations) {
    text += note.name == note.identifier
                ? fmt::format("\n`{}` ({}:{}-{}):\n", note.name, note.path, note.line_begin,
                              note.line_end)
                : fmt::format("\n`{}` is unknown; the nearest declared name is `{}` ({}:{}-{}):\n",
                              note.identifier, note.name, note.path, note.line_begin,
                              note.line_end);
    text += "\n```\n" + note.text + "```\n";
  }
}

void add_wrong_outputs(std::string& text, const Feedback& feedback) {
  if (feedback.wrong_outputs.empty()) return;
  text +=
      "\n## Wrong outputs (first few)\n\n| where | output | elements | mismatches | first "
      "mismatch at | max abs error (at) | relative error norm | NaN/Inf |\n|---|---|---|---|---|"
      "---|---|---|\n";
  for (const WrongOutput& wrong : feedback.wrong_outputs)
    text += fmt::format("| {} | {} | {} | {} | {} | {:.3g} ({}) | {:.3g} | {} |\n", wrong.where,
                        wrong.check.output_index, wrong.elements, wrong.check.mismatches,
                        wrong.check.first_mismatch_index, wrong.check.max_abs_error,
                        wrong.check.max_abs_error_index, wrong.check.relative_error_norm,
                        wrong.check.nan_or_inf);
  for (const WrongOutput& wrong : feedback.wrong_outputs)
    if (!wrong.message.empty()) text += "\n" + wrong.message + "\n";
}

void add_timing(std::string& text, const Feedback& feedback) {
  if (!feedback.timed) return;
  text += fmt::format(
      "\n## Timing\n\nMedian {:.4f} ms per forward ({:.4f} ms with a device-wide "
      "synchronize)",
      feedback.median_ms, feedback.synced_median_ms);
  if (feedback.launches_per_forward)
    text += fmt::format(", {:.0f} kernel launches per forward", *feedback.launches_per_forward);
  text += ".\n";
  for (const Speedup& baseline : feedback.baselines)
    text += fmt::format("- PyTorch {}: {:.4f} ms → speedup {:.2f}x\n", baseline.mode,
                        baseline.baseline_ms, baseline.speedup);
}

void add_kernels(std::string& text, const Feedback& feedback) {
  if (feedback.kernels.empty()) return;
  text +=
      "\n## Kernel resources\n\n| kernel | registers | spill bytes | shared bytes |\n|---|---|---"
      "|---|\n";
  for (const KernelResources& kernel : feedback.kernels)
    text += fmt::format("| `{}` | {} | {} | {} |\n", kernel.name, kernel.registers,
                        kernel.spill_bytes, kernel.shared_bytes);
}

}  // namespace

std::string describe_feedback(const Feedback& feedback) {
  std::string text = feedback.outcome
                         ? fmt::format("Outcome: **{}**", enum_name(*feedback.outcome))
                         : fmt::format("Verification state: **{}**", enum_name(feedback.state));
  if (!feedback.reason.empty()) text += " — " + feedback.reason;
  text += "\n";
  add_compile_errors(text, feedback);
  add_declarations(text, feedback);
  add_wrong_outputs(text, feedback);
  if (!feedback.findings.empty()) {
    text += "\n## Findings of the hacking checks\n\n";
    for (const std::string& finding : feedback.findings)
      text += "- " + finding + "\n";
  }
  add_timing(text, feedback);
  add_kernels(text, feedback);
  if (!feedback.profile.empty()) text += "\n## Profile\n\n" + describe_profile(feedback.profile);
  text += fmt::format("\n## Suggestion ({})\n\n{}\n", enum_name(feedback.suggestion.rule),
                      feedback.suggestion.text);
  return text;
}

std::string describe_scope(const PromptTask& task, int subtask) {
  if (subtask < 0 || !task.plan || subtask >= static_cast<int>(task.plan->subtasks.size()))
    return "The whole program: every kernel of the plan and the host code that runs them, in one "
           "file.";
  const plan::Subtask& part = task.plan->subtasks[static_cast<size_t>(subtask)];
  return fmt::format(
      "Subtask {} of {}: `{}` (kernel-library entry `{}`). Write the whole program file, with this "
      "subtask implemented as its own kernel(s) as the plan specifies.",
      subtask + 1, task.plan->subtasks.size(), part.id, part.kernel);
}

llm::PromptValues planner_values(const PromptTask& task,
                                 const std::optional<ProfileSummary>& reference_profile) {
  llm::PromptValues values = shared_values(task);
  values["graph"] = "```text\n" + ir::format_node_table(task.graph) + "```";
  values["reference_profile"] =
      reference_profile && !reference_profile->kernels.empty()
          ? "# Where the reference spends its time\n\n" +
                describe_profile(reference_profile->kernels)
          : "(No profile of the reference was taken: estimate the costs from the shapes.)";
  values["plan_schema"] = schema_text(llm::llm_plan_schema());
  return trimmed(std::move(values));
}

llm::PromptValues coder_generate_values(const PromptTask& task, int subtask) {
  llm::PromptValues values = shared_values(task);
  values["plan"] = plan_or_none(task);
  values["scope"] = describe_scope(task, subtask);
  values["program_abi"] = program_abi_header();
  return trimmed(std::move(values));
}

llm::PromptValues coder_revise_values(const PromptTask& task, int subtask,
                                      const std::string& previous_program,
                                      const Feedback& feedback) {
  llm::PromptValues values = coder_generate_values(task, subtask);
  values["previous_program"] = previous_program;
  values["feedback"] = describe_feedback(feedback);
  return trimmed(std::move(values));
}

llm::PromptValues verifier_analysis_values(const PromptTask& task, const std::string& program,
                                           const Feedback& feedback) {
  Feedback measurements = feedback;  // the profile has its own section in this prompt
  measurements.profile.clear();
  return trimmed({{"gpu_facts", describe_gpu(task.gpu, task.arch)},
                  {"program", program},
                  {"feedback", describe_feedback(measurements)},
                  {"profile", describe_profile(feedback.profile)},
                  {"analysis_schema", schema_text(llm::verifier_analysis_schema())}});
}

llm::PromptValues replan_values(const PromptTask& task, const std::string& previous_plan,
                                const std::string& reason,
                                const std::optional<Feedback>& feedback) {
  llm::PromptValues values = shared_values(task);
  values["previous_plan"] = previous_plan;
  values["replan_reason"] = reason;
  values["feedback"] = feedback ? describe_feedback(*feedback) : "(none)";
  values["plan_schema"] = schema_text(llm::llm_plan_schema());
  return trimmed(std::move(values));
}

}  // namespace stitch::agents
