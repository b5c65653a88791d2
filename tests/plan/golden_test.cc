// Whole plans of the project's own tasks (tests/tasks/plan_*.py, captured into data/ by
// regen_fixtures.sh), compared exactly with golden/<task>.txt: the table and every spec. A change
// in planning shows up as a diff here. STITCH_UPDATE_GOLDEN=1 rewrites the golden files and fails
// (tests/support/golden_file.h). A refused task is asserted refused, never skipped.
// Also: plan.json round-trips for every fixture, and corrupt plan.json gives a named error.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "plan/plan_check.h"
#include "plan/plan_json.h"
#include "plan/plan_print.h"
#include "plan/planner.h"
#include "plan_test_graphs.h"
#include "support/golden_file.h"
#include "support/plan_fixtures.h"
#include "util/fs.h"

namespace stitch::plan {
namespace {

using namespace testing;  // NOLINT: test helpers

bool refused(const std::string& task) {
  return stitch::testing::plan_fixture_refused(task);
}

// The plan's text, or the refusal; H200 peaks regardless of the machine.
std::string plan_text(const std::string& task) {
  auto graph = ir::load_graph(data_path(task + ".graph.json"));
  if (!graph.ok()) return "load error: " + graph.error().message + "\n";
  auto plan = make_plan(*graph, stitch::testing::plan_fixture_options(task));
  if (!plan.ok()) return "refused: " + plan.error().message + "\n";
  return format_plan(*plan) + format_plan_details(*plan);
}

class GoldenPlan : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenPlan, MatchesGoldenText) {
  const std::string task = GetParam();
  const std::string actual = plan_text(task);
  EXPECT_EQ(actual.rfind("refused: ", 0) == 0, refused(task)) << actual;
  stitch::testing::expect_golden(golden_path(task + ".txt"), actual);
}

TEST_P(GoldenPlan, JsonRoundTrips) {
  const std::string task = GetParam();
  auto graph = ir::load_graph(data_path(task + ".graph.json"));
  ASSERT_TRUE(graph.ok());
  auto plan = make_plan(*graph, stitch::testing::plan_fixture_options(task));
  if (refused(task)) {
    EXPECT_FALSE(plan.ok())
        << task
        << " is planned now: move it out of plan_fixture_refused() (tests/support/plan_fixtures.h)";
    return;
  }
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const std::string text = serialize_plan(*plan);
  auto parsed = parse_plan(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_TRUE(*parsed == *plan);
  EXPECT_EQ(serialize_plan(*parsed), text);
}

INSTANTIATE_TEST_SUITE_P(Tasks, GoldenPlan, ::testing::ValuesIn(stitch::testing::kPlanFixtures),
                         [](const auto& info) { return std::string(info.param); });

TEST(GoldenPlan, ScanIsRefusedByName) {
  EXPECT_EQ(plan_text("plan_scan_refused"),
            "refused: node 'logcumsumexp' (aten.logcumsumexp.default): logcumsumexp is not "
            "covered by the built-in Coder yet\n");
}

TEST(PlanJson, ErrorsNameTheField) {
  auto graph = ir::load_graph(data_path("plan_gemm_bias_relu.graph.json"));
  ASSERT_TRUE(graph.ok());
  auto plan = make_plan(*graph, PlanOptions{});
  ASSERT_TRUE(plan.ok());
  std::string text = serialize_plan(*plan);
  EXPECT_FALSE(parse_plan("{").ok());
  auto wrong_format = parse_plan(R"({"format": "stitchcuda.graph", "version": 1})");
  ASSERT_FALSE(wrong_format.ok());
  EXPECT_NE(wrong_format.error().message.find("not a plan"), std::string::npos);
  const std::string bad_node = [&] {
    std::string copy = text;
    const size_t at = copy.find("\"node\": \"addmm\"");
    EXPECT_NE(at, std::string::npos);
    copy.replace(at, 15, "\"node\": \"nope!\"");
    return copy;
  }();
  auto unknown = parse_plan(bad_node);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("unknown node 'nope!'"), std::string::npos)
      << unknown.error().message;
  std::string future = text;
  future.replace(future.find("\"version\": 1"), 12, "\"version\": 9");
  auto newer = parse_plan(future);
  ASSERT_FALSE(newer.ok());
  EXPECT_NE(newer.error().message.find("version 9"), std::string::npos);
}

}  // namespace
}  // namespace stitch::plan

namespace stitch::plan {
namespace {

TEST(PlanCheck, CatchesAReadBeforeTheStore) {
  auto graph = ir::load_graph(testing::data_path("plan_linear_batchnorm.graph.json"));
  ASSERT_TRUE(graph.ok());
  auto plan = make_plan(*graph, PlanOptions{});
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(check_plan(*plan).ok());
  std::swap(plan->subtasks[0], plan->subtasks[1]);  // the statistics before the GEMM they read
  const Status broken = check_plan(*plan);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.error().message.find("reads 'addmm' before any subtask stores it"),
            std::string::npos)
      << broken.error().message;
}

}  // namespace
}  // namespace stitch::plan
