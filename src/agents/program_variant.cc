// Applying a built-in Coder variant to a plan (program_variant.h).
#include "agents/program_variant.h"

#include <variant>

#include "plan/kernel_choice.h"

namespace stitch::agents {

namespace {
bool is_gemm(const plan::Subtask& subtask) {
  return std::holds_alternative<plan::MatmulSpec>(subtask.spec);
}
bool is_attention(const plan::Subtask& subtask) {
  return std::holds_alternative<plan::AttentionSpec>(subtask.spec);
}
bool is_elementwise(const plan::Subtask& subtask) {
  return std::holds_alternative<plan::ElementwiseSpec>(subtask.spec);
}
}  // namespace

bool tunable_may_be_overridden(const plan::Subtask& subtask, const std::string& key,
                               int64_t value) {
  if (key == "block")  // launch_elementwise's block: elementwise subtasks and GEMM epilogues
    return (is_elementwise(subtask) || is_gemm(subtask)) && value >= 32 && value <= 1024 &&
           value % 32 == 0;
  if (key == "split_b_at_init" || key == "tf32x3_kernel")
    return is_gemm(subtask) && (value == 0 || value == 1);
  // The fused attention's fp32-track arithmetic too: 3xTF32 tensor cores (1) or its FP32 FMA
  // kernel (0); not where the track puts the products on TF32 / BF16 (tensor_math).
  if (key == "split_tf32x3")
    return (value == 0 || value == 1) &&
           (is_gemm(subtask) || (is_attention(subtask) &&
                                 plan::subtask_tensor_math(subtask) == plan::TensorMath::fp32));
  return false;
}

Result<AppliedVariant> apply_variant(const plan::Plan& plan, const nlohmann::json& variant) {
  AppliedVariant applied{plan, {}};
  if (variant.is_null()) return applied;
  if (!variant.is_object()) return make_error("a program variant must be a JSON object");
  for (const auto& [key, value] : variant.items()) {
    if (key == "cuda_graph") {
      if (!value.is_boolean()) return make_error("variant cuda_graph: expected true or false");
      applied.emit.cuda_graph = value.get<bool>();
    } else if (key == "tune_iterations") {
      if (!value.is_number_integer() || value.get<int>() < 1 || value.get<int>() > 1000)
        return make_error("variant tune_iterations: expected an integer in [1, 1000]");
      applied.emit.tune_iterations = value.get<int>();
    } else if (key == "subtasks") {
      if (!value.is_object()) return make_error("variant subtasks: expected an object");
      for (const auto& [id, overrides] : value.items()) {
        plan::Subtask* subtask = nullptr;
        for (auto& candidate : applied.plan.subtasks)
          if (candidate.id == id) subtask = &candidate;
        if (subtask == nullptr) return make_error("variant: the plan has no subtask '{}'", id);
        if (!overrides.is_object()) return make_error("variant subtask {}: expected an object", id);
        for (const auto& [tunable, setting] : overrides.items()) {
          if (!setting.is_number_integer())
            return make_error("variant subtask {} {}: expected an integer", id, tunable);
          const int64_t number = setting.get<int64_t>();
          if (!tunable_may_be_overridden(*subtask, tunable, number))
            return make_error("variant subtask {}: {} = {} is not a setting its kernel ({}) takes",
                              id, tunable, number, subtask->kernel);
          subtask->tunables[tunable] = number;
        }
      }
    } else {
      return make_error("variant: unknown knob '{}' (cuda_graph, tune_iterations, subtasks)", key);
    }
  }
  return applied;
}

}  // namespace stitch::agents
