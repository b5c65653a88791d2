// The contract of an LLM-written subtask (subtask_signature.h).
#include "codegen/subtask_signature.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "codegen/emit_context.h"
#include "plan/access.h"
#include "plan/subtasks.h"

namespace stitch::codegen {
namespace {

SignatureOperand make_operand(const plan::Plan& plan, const plan::Access& access, bool output,
                              int number) {
  SignatureOperand operand;
  operand.name = fmt::format("{}{}", output ? "out" : "in", number);
  operand.value = plan.graph.name_of(access.base);
  operand.output = output;
  operand.dtype = plan.graph.type_of(access.base).dtype;
  operand.shape = access.shape;
  operand.strides = access.strides;
  operand.access = access;
  return operand;
}

// How an argument reads in the prompt: references by the pointer that holds them.
std::string render_arg(const plan::Plan& plan, const SubtaskSignature& signature,
                       const ir::Arg& arg) {
  return std::visit(
      [&](const auto& value) -> std::string {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::monostate>) return "None";
        if constexpr (std::is_same_v<T, bool>) return value ? "True" : "False";
        if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>)
          return fmt::format("{}", value);
        if constexpr (std::is_same_v<T, std::string>) return fmt::format("'{}'", value);
        if constexpr (std::is_same_v<T, ir::DType>) return std::string(ir::dtype_name(value));
        if constexpr (std::is_same_v<T, ir::EnumArg>) return value.value;
        if constexpr (std::is_same_v<T, ir::ValueRef>) {
          const auto found = plan.values.find(plan.graph.name_of(value));
          for (const SignatureOperand& operand : signature.operands)
            if (found != plan.values.end() && operand.access == found->second) return operand.name;
          return plan.graph.name_of(value);
        }
        if constexpr (std::is_same_v<T, ir::ArgList>) {
          std::vector<std::string> items;
          for (const ir::Arg& item : value)
            items.push_back(render_arg(plan, signature, item));
          return fmt::format("[{}]", fmt::join(items, ", "));
        }
        return "?";
      },
      arg.value);
}

}  // namespace

std::string SubtaskSignature::parameters() const {
  std::string text;
  for (const SignatureOperand& operand : operands)
    text += fmt::format("{}{}* {}, ", operand.output ? "" : "const ", c_type(operand.dtype),
                        operand.name);
  return text + "cudaStream_t stream";
}

std::string SubtaskSignature::declaration() const {
  return fmt::format("cudaError_t {}({})", function, parameters());
}

bool SubtaskSignature::contiguous() const {
  return std::all_of(operands.begin(), operands.end(), [](const SignatureOperand& operand) {
    return operand.strides == ir::contiguous_strides(operand.shape);
  });
}

bool SubtaskSignature::same_operands(const SubtaskSignature& other) const {
  if (operands.size() != other.operands.size()) return false;
  for (size_t i = 0; i < operands.size(); ++i) {
    const SignatureOperand& a = operands[i];
    const SignatureOperand& b = other.operands[i];
    if (a.output != b.output || a.dtype != b.dtype || a.shape != b.shape || a.strides != b.strides)
      return false;
  }
  return true;
}

Result<SubtaskSignature> subtask_signature(const plan::Plan& plan, const plan::Subtask& subtask) {
  SubtaskSignature signature;
  signature.subtask_id = subtask.id;
  signature.function = "subtask_" + subtask.id;
  const std::vector<ir::ValueRef> writes = plan::subtask_writes(subtask);
  std::vector<plan::Access> inputs;
  for (const plan::Access& read : plan::subtask_reads(subtask)) {
    const bool written = std::find(writes.begin(), writes.end(), read.base) != writes.end();
    if (!written && std::find(inputs.begin(), inputs.end(), read) == inputs.end())
      inputs.push_back(read);
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    signature.operands.push_back(make_operand(plan, inputs[i], false, static_cast<int>(i)));
  for (size_t i = 0; i < writes.size(); ++i) {
    const auto& shape = plan.graph.type_of(writes[i]).shape;
    signature.operands.push_back(
        make_operand(plan, plan::contiguous_access(writes[i], shape), true, static_cast<int>(i)));
  }
  for (const SignatureOperand& operand : signature.operands)
    if (c_type(operand.dtype).empty())
      return make_error("subtask {}: '{}' has dtype {}, which a signature cannot carry yet",
                        subtask.id, operand.value, ir::dtype_name(operand.dtype));
  return signature;
}

std::string describe_signature(const plan::Plan& plan, const plan::Subtask& subtask,
                               const SubtaskSignature& signature) {
  std::string text = fmt::format("```cuda\n{};\n```\n\n", signature.declaration());
  text += "| pointer | holds | dtype | shape | strides (elements) |\n|---|---|---|---|---|\n";
  for (const SignatureOperand& operand : signature.operands)
    text += fmt::format("| `{}` | {}{} | {} | [{}] | [{}] |\n", operand.name, operand.value,
                        operand.output ? " (write every element)" : " (read only)",
                        ir::dtype_name(operand.dtype), fmt::join(operand.shape, ", "),
                        fmt::join(operand.strides, ", "));
  text += "\nIt computes these graph nodes (core ATen ops, PyTorch semantics), in order:\n\n";
  for (int index : subtask.nodes) {
    const ir::Node& node = plan.graph.nodes.at(index);
    std::vector<std::string> args;
    for (const ir::Arg& arg : node.args)
      args.push_back(render_arg(plan, signature, arg));
    for (const auto& [name, arg] : node.kwargs)
      args.push_back(fmt::format("{}={}", name, render_arg(plan, signature, arg)));
    std::vector<std::string> outputs;
    for (const ir::TensorType& type : node.outputs)
      outputs.push_back(ir::format_tensor_type(type));
    text += fmt::format("- `{} = {}({})` → {}\n", node.id, node.op_name, fmt::join(args, ", "),
                        fmt::join(outputs, ", "));
  }
  for (const SignatureOperand& operand : signature.operands)
    if (operand.output)
      text += fmt::format("\n`{}` receives the value `{}`.", operand.name, operand.value);
  return text + "\n";
}

std::string check_subtask_code(const std::string& source, const SubtaskSignature& signature) {
  const std::string& name = signature.function;
  for (size_t at = source.find(name); at != std::string::npos; at = source.find(name, at + 1)) {
    const bool starts = at == 0 || !(std::isalnum(static_cast<unsigned char>(source[at - 1])) ||
                                     source[at - 1] == '_');
    size_t pos = at + name.size();
    while (pos < source.size() && std::isspace(static_cast<unsigned char>(source[pos])))
      ++pos;
    if (!starts || pos >= source.size() || source[pos] != '(') continue;
    int depth = 0;
    for (; pos < source.size(); ++pos) {
      depth += source[pos] == '(' ? 1 : source[pos] == ')' ? -1 : 0;
      if (depth == 0) break;
    }
    ++pos;
    while (pos < source.size() && std::isspace(static_cast<unsigned char>(source[pos])))
      ++pos;
    if (pos < source.size() && source[pos] == '{') return "";
  }
  return fmt::format("the reply does not define `{}` (with a body)", signature.declaration());
}

}  // namespace stitch::codegen
