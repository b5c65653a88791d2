// The program emitter: one CUDA program (.cu, the ABI of include/stitch/program.h) per plan. It only
// instantiates the kernel library (kernels/*.cuh): one functor per fused body, one launch per
// subtask, and the tables kernels/host_program.cuh's fixed host program needs (shapes, persistent
// and arena layout, GEMM state and set-up). That header does the orchestration —
//   stitch_init     checks the params, copies them once into a persistent block the program owns,
//                   sizes one workspace arena, creates cuBLASLt descriptors and picks each GEMM's
//                   algorithm (heuristic candidates, then a short timing), does the same for each
//                   convolution's cuDNN engine, runs at-init subtasks;
//   stitch_forward  checks inputs/outputs against the captured shapes, then replays a CUDA graph
//                   of all subtasks keyed by the input and output pointers (captured on the first
//                   call with those pointers); every CUDA/cuBLAS call is checked.
#pragma once

#include <map>
#include <string>

#include "codegen/subtask_signature.h"
#include "plan/plan.h"
#include "util/result.h"

namespace stitch::codegen {

struct EmitOptions {
  bool cuda_graph = true;  // the plan's host strategy can also turn graphs off
  int tune_iterations = 5;  // per cuBLASLt candidate at init
  // Subtasks an LLM wrote (hybrid Coder), by subtask id: their code goes into the program and a
  // call of their function replaces the built-in emission (subtask_signature.h).
  std::map<std::string, LlmSubtaskCode> llm_subtasks;
};

struct EmittedProgram {
  std::string source;  // program.cu
  std::vector<std::string> libraries;  // -l flags the program needs (cublasLt, cudnn)
};

// Fails, naming the subtask, for what the emitter cannot express (never a silently wrong program).
Result<EmittedProgram> emit_program(const plan::Plan& plan, const EmitOptions& options = {});

}  // namespace stitch::codegen
