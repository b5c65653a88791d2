// The fusion rows of the differential table (fusion_table.h), CPU mode: every rule named in
// src/plan/fusion.h has a row, and each row plans into the subtasks its rule gives and emits.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>

#include "codegen/program_emitter.h"
#include "fusion_table.h"
#include "plan/planner.h"

namespace stitch::codegen::testing {
namespace {

// The rule names of fusion.h's header comment ("//   F3 prologue ...").
std::set<std::string> fusion_rules() {
  std::ifstream in(std::string(STITCH_SOURCE_DIR) + "/src/plan/fusion.h");
  std::set<std::string> rules;
  const std::regex rule(R"(^//\s+(F\d+)\s+\w)");
  std::smatch match;
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, match, rule)) rules.insert(match[1]);
  return rules;
}

TEST(FusionTable, EveryFusionRuleHasARow) {
  const std::set<std::string> rules = fusion_rules();
  EXPECT_GE(rules.size(), 7u) << "fusion.h lists its rules as `//   F<n> <name>`";
  std::set<std::string> covered;
  for (const FusionCase& c : fusion_cases()) covered.insert(c.rule);
  for (const std::string& rule : rules)
    EXPECT_EQ(covered.count(rule), 1u) << rule << " has no row in tests/codegen/fusion_table.cc";
}

TEST(FusionTable, EachRowPlansAsItsRuleSaysAndEmits) {
  for (const FusionCase& c : fusion_cases()) {
    SCOPED_TRACE(c.name + " (" + c.rule + ")");
    auto plan = plan::make_plan(c.graph, plan::PlanOptions{});
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    std::vector<std::string> kernels;
    for (const plan::Subtask& subtask : plan->subtasks) kernels.push_back(subtask.kernel);
    EXPECT_EQ(kernels, c.kernels);
    auto program = emit_program(*plan);
    EXPECT_TRUE(program.ok()) << program.error().message;
  }
}

}  // namespace
}  // namespace stitch::codegen::testing
