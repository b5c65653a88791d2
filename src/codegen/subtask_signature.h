// Subtask-level coding (the hybrid Coder): the contract of one subtask an LLM writes, and the code
// it wrote. The contract is a host function that launches the subtask's work on a stream and
// returns its launch status, one pointer per buffer the subtask reads or writes:
//
//   cudaError_t subtask_s01_opaque_logcumsumexp_4x64(const float* in0, float* out0, cudaStream_t stream);
//
// The prompt states each pointer's value, dtype, shape and strides (in elements; an input's
// pointer already points at its first element). The emitter (program_emitter.h, EmitOptions::
// llm_subtasks) puts the code in the program and calls the function in plan order with the real
// pointers — the stitching — both in the whole program and in the subtask's own program (its
// subgraph alone, plan/subgraph.h), where the same declaration gets contiguous buffers.
#pragma once

#include <string>
#include <vector>

#include "plan/plan.h"
#include "util/result.h"

namespace stitch::codegen {

struct SignatureOperand {
  std::string name;   // in0, in1, ..., out0, ...
  std::string value;  // the plan value it holds (Graph::name_of)
  bool output = false;
  ir::DType dtype = ir::DType::float32;
  std::vector<int64_t> shape, strides;  // elements
  plan::Access access;                  // inputs: what is read; outputs: the stored value, whole
  bool operator==(const SignatureOperand&) const = default;
};

struct SubtaskSignature {
  std::string subtask_id;
  std::string function;                    // subtask_<id>
  std::vector<SignatureOperand> operands;  // inputs, then outputs
  // "const float* in0, float* out0, cudaStream_t stream"
  std::string parameters() const;
  // "cudaError_t <function>(<parameters>)"
  std::string declaration() const;
  // Whether every operand is a contiguous buffer (the subtask's own program hands those over).
  bool contiguous() const;
  // The same pointers, shapes, strides and dtypes (the function name aside).
  bool same_operands(const SubtaskSignature& other) const;
};

// The signature of `subtask`: its reads (deduplicated; a value it stores and reads back is only
// an output), then its stores. An Error for a dtype the emitter does not render.
Result<SubtaskSignature> subtask_signature(const plan::Plan& plan, const plan::Subtask& subtask);

// The prompt's description of what the function must compute: the declaration, one line per
// pointer, and the graph nodes it covers (op, arguments in terms of the pointers, output types).
std::string describe_signature(const plan::Plan& plan, const plan::Subtask& subtask,
                               const SubtaskSignature& signature);

// Code an LLM wrote for one subtask.
struct LlmSubtaskCode {
  std::string function;  // the name its signature gives (the call site's)
  std::string source;    // includes, kernels and the function, as the reply had them
};

// Whether `source` defines `function` with the declaration's parameters (a quick check before any
// build: the name followed by a parameter list and a body); empty when it does, else why not.
std::string check_subtask_code(const std::string& source, const SubtaskSignature& signature);

}  // namespace stitch::codegen
