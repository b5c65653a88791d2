// The LLM roles' typed JSON answers (src/llm/answers.h): the plan and the Verifier's analysis read
// back, and what the readers refuse (their errors go back to the model on the re-ask).
#include "llm/answers.h"

#include <gtest/gtest.h>

namespace stitch::llm {
namespace {

using nlohmann::json;

json plan_doc() {
  return {{"summary", "one fused GEMM"},
          {"fusion_decisions", {"bias and ReLU into the GEMM epilogue"}},
          {"intermediate_buffers", json::array()},
          {"kernels",
           {{{"id", "k1"},
             {"operations", {"addmm", "relu"}},
             {"computes", "relu(x @ W^T + b)"},
             {"inputs", {"x", "weight", "bias"}},
             {"outputs", {"out"}},
             {"implementation", "cublasLt"},
             {"parallelization", "library tiles"},
             {"bound", "compute"}}}},
          {"execution_order", {"k1"}},
          {"weight_preparation", json::array()},
          {"optimizations", {"epilogue fusion"}},
          {"host_strategy", "handle and algorithm chosen in init"},
          {"changes_from_previous", ""}};
}

TEST(LlmPlan, ReadsAndWritesBack) {
  auto plan = llm_plan_from_json(plan_doc());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->kernels.size(), 1u);
  EXPECT_EQ(plan->kernels[0].implementation, "cublasLt");
  EXPECT_EQ(llm_plan_to_json(*plan), plan_doc());
  EXPECT_TRUE(llm_plan_schema()["required"].size() == 9);
}

TEST(LlmPlan, RefusesWhatDoesNotMatch) {
  json missing = plan_doc();
  missing.erase("host_strategy");
  EXPECT_NE(llm_plan_from_json(missing).error().message.find("host_strategy"), std::string::npos);
  json unknown = plan_doc();
  unknown["execution_order"] = {"k1", "k2"};
  EXPECT_EQ(llm_plan_from_json(unknown).error().message,
            "execution_order: 'k2' is not a kernel of the plan");
  json typed = plan_doc();
  typed["kernels"][0]["operations"] = "addmm";
  EXPECT_NE(llm_plan_from_json(typed).error().message.find("kernels[0]"), std::string::npos);
  json empty = plan_doc();
  empty["kernels"] = json::array();
  empty["execution_order"] = json::array();
  EXPECT_FALSE(llm_plan_from_json(empty).ok());
  EXPECT_FALSE(llm_plan_from_json(json::array()).ok());
}

TEST(VerifierAnalysis, ReadsTheEnumsByName) {
  const json doc = {{"bottleneck", "launch"},
                    {"kernel", "all"},
                    {"evidence", {"14 launches per forward, 6 us each"}},
                    {"optimisation", "capture the forward in a CUDA graph"},
                    {"change", "stitch_forward: capture once, replay"},
                    {"next_step", "optimise"}};
  auto analysis = verifier_analysis_from_json(doc);
  ASSERT_TRUE(analysis.ok()) << analysis.error().message;
  EXPECT_EQ(analysis->bottleneck, Bottleneck::launch);
  EXPECT_EQ(analysis->next_step, NextStep::optimise);
  json bad = doc;
  bad["next_step"] = "celebrate";
  EXPECT_NE(verifier_analysis_from_json(bad).error().message.find("next_step"), std::string::npos);
  bad = doc;
  bad["evidence"] = json::array();
  EXPECT_EQ(verifier_analysis_from_json(bad).error().message,
            "evidence: give at least one measured metric");
  EXPECT_EQ(verifier_analysis_schema()["properties"]["bottleneck"]["enum"].size(), 5u);
}

}  // namespace
}  // namespace stitch::llm
