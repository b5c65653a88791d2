// A run directory for the LLM roles' tests, as the loop leaves it before the Coder's first step:
// tests/tasks/plan_gemm_bias_relu.py as task.py, its captured graph (tests/plan/data/), and the
// built-in Planner's plan v1 at the H200's peaks (plans/plan.v1.json).
#pragma once

#include <filesystem>

#include <gtest/gtest.h>

#include "plan/plan_json.h"
#include "plan/planner.h"
#include "util/fs.h"

namespace stitch::agents::testing {

inline std::filesystem::path llm_test_plan_file(const std::filesystem::path& run_dir) {
  return run_dir / "plans" / "plan.v1.json";
}

// Fills `run_dir` (removed first); a gtest failure when any step fails.
inline void make_llm_test_run(const std::filesystem::path& run_dir) {
  namespace fs = std::filesystem;
  const fs::path tests = STITCH_TEST_DATA_DIR;
  fs::remove_all(run_dir);
  ASSERT_TRUE(make_dirs(run_dir / "plans").ok());
  fs::copy_file(tests / "tasks" / "plan_gemm_bias_relu.py", run_dir / "task.py");
  fs::copy_file(tests / "plan" / "data" / "plan_gemm_bias_relu.graph.json", run_dir / "graph.json");
  auto graph = ir::load_graph((run_dir / "graph.json").string());
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  auto plan = plan::make_plan(*graph, plan::PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_TRUE(plan::save_plan(*plan, llm_test_plan_file(run_dir).string()).ok());
}

}  // namespace stitch::agents::testing
