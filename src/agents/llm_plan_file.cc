// An LLM Planner's plan file (llm_plan_file.h).
#include "agents/llm_plan_file.h"

#include <fmt/format.h>

#include "util/fs.h"

namespace stitch::agents {
namespace {

using nlohmann::json;

std::string joined(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items)
    text += (text.empty() ? "" : ", ") + item;
  return text.empty() ? "—" : text;
}

void add_list(std::string& text, const char* title, const std::vector<std::string>& items) {
  if (items.empty()) return;
  text += fmt::format("\n## {}\n\n", title);
  for (const std::string& item : items)
    text += "- " + item + "\n";
}

}  // namespace

Status write_llm_plan_file(const std::filesystem::path& path, const llm::LlmPlan& plan,
                           const std::string& model) {
  const json doc = {{"format", kLlmPlanFormat},
                    {"version", 1},
                    {"model", model},
                    {"plan", llm::llm_plan_to_json(plan)}};
  return write_file_atomic(path, doc.dump(2) + "\n");
}

Result<std::optional<llm::LlmPlan>> read_llm_plan_file(const std::filesystem::path& path) {
  STITCH_ASSIGN_OR_RETURN(std::string text, read_file(path));
  const json doc = json::parse(text, nullptr, false);
  if (!doc.is_object() || doc.value("format", "") != kLlmPlanFormat)
    return std::optional<llm::LlmPlan>();
  if (doc.value("version", 0) != 1)
    return make_error("{}: LLM plan version {} (this stitchcuda reads 1)", path.string(),
                      doc.value("version", 0));
  auto plan = llm::llm_plan_from_json(doc.value("plan", json::object()));
  if (!plan.ok()) return make_error("{}: {}", path.string(), plan.error().message);
  return std::optional<llm::LlmPlan>(std::move(*plan));
}

std::string describe_llm_plan(const llm::LlmPlan& plan) {
  std::string text = "The Planner's plan: " + plan.summary + "\n\n## Kernels, in execution order\n";
  for (const std::string& id : plan.execution_order)
    for (const llm::PlannedKernel& kernel : plan.kernels)
      if (kernel.id == id)
        text += fmt::format(
            "\n- `{}`: {} (operations: {}; inputs: {}; outputs: {}; implementation: {}; "
            "parallelization: {}; bound: {})\n",
            kernel.id, kernel.computes, joined(kernel.operations), joined(kernel.inputs),
            joined(kernel.outputs), kernel.implementation, kernel.parallelization, kernel.bound);
  if (!plan.intermediate_buffers.empty()) {
    text += "\n## Intermediate buffers\n\n";
    for (const llm::PlannedBuffer& buffer : plan.intermediate_buffers) {
      std::vector<std::string> dims;
      for (int64_t dim : buffer.shape)
        dims.push_back(std::to_string(dim));
      text += fmt::format("- `{}` [{}] {}{}\n", buffer.name, joined(dims), buffer.dtype,
                          buffer.reuses.empty() ? "" : " (reuses " + buffer.reuses + ")");
    }
  }
  add_list(text, "Fusion decisions", plan.fusion_decisions);
  add_list(text, "Weight preparation", plan.weight_preparation);
  add_list(text, "Optimisations", plan.optimizations);
  if (!plan.host_strategy.empty()) text += "\n## Host strategy\n\n" + plan.host_strategy + "\n";
  if (!plan.changes_from_previous.empty())
    text += "\n## Changes from the previous plan\n\n" + plan.changes_from_previous + "\n";
  return text;
}

}  // namespace stitch::agents
