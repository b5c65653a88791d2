// The typed answers the LLM roles give in JSON — the Planner's plan and the Verifier's analysis —
// with the JSON schemas the prompts quote (and a server may enforce through response_format), and
// one reader each. A reader's Error says what does not match, in words a model can act on (it goes
// back on the re-ask, json_reply.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/enum_names.h"
#include "util/result.h"

namespace stitch::llm {

// ---- The Planner's plan -------------------------------------------------------------------------

struct PlannedBuffer {
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype;
  std::string reuses;  // the buffer whose memory it shares; empty: its own
};

struct PlannedKernel {
  std::string id;                       // "k1_gemm_bias_relu"
  std::vector<std::string> operations;  // the graph nodes (ids or ATen names) it computes
  std::string computes;                 // what, in a sentence
  std::vector<std::string> inputs;      // buffer, input or param names
  std::vector<std::string> outputs;
  std::string implementation;  // "own kernel", "cublasLt", "cudnn", ...
  std::string parallelization;
  std::string bound;  // "memory" | "compute" | "latency"
};

struct LlmPlan {
  std::string summary;
  std::vector<std::string> fusion_decisions;
  std::vector<PlannedBuffer> intermediate_buffers;
  std::vector<PlannedKernel> kernels;        // the subtasks
  std::vector<std::string> execution_order;  // kernel ids
  std::vector<std::string> weight_preparation;
  std::vector<std::string> optimizations;
  std::string host_strategy;
  std::string changes_from_previous;  // replans only
};

const nlohmann::json& llm_plan_schema();
// An Error when a required field is missing or of the wrong type, or execution_order names a
// kernel the plan does not define.
Result<LlmPlan> llm_plan_from_json(const nlohmann::json& doc);
nlohmann::json llm_plan_to_json(const LlmPlan& plan);

// ---- The Verifier's analysis --------------------------------------------------------------------

enum class Bottleneck : uint8_t { memory, compute, latency, launch, library };
inline constexpr std::array<std::string_view, 5> kBottleneckNames = {"memory", "compute", "latency",
                                                                     "launch", "library"};
constexpr const auto& enum_names(Bottleneck) {
  return kBottleneckNames;
}
static_assert(names_every_enumerator(Bottleneck::library));

enum class NextStep : uint8_t { optimise, replan, stop };
inline constexpr std::array<std::string_view, 3> kNextStepNames = {"optimise", "replan", "stop"};
constexpr const auto& enum_names(NextStep) {
  return kNextStepNames;
}
static_assert(names_every_enumerator(NextStep::stop));

struct VerifierAnalysis {
  Bottleneck bottleneck = Bottleneck::memory;
  std::string kernel;                 // where the time goes
  std::vector<std::string> evidence;  // metrics with their numbers
  std::string optimisation;           // the one change proposed
  std::string change;                 // what to edit, concretely
  NextStep next_step = NextStep::optimise;
};

const nlohmann::json& verifier_analysis_schema();
Result<VerifierAnalysis> verifier_analysis_from_json(const nlohmann::json& doc);

}  // namespace stitch::llm
