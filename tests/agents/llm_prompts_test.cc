// The prompts the LLM roles send (src/llm/prompts/*.md filled by agents/llm_context.h) for a
// bundled task (llm_test_run.h: plan_gemm_bias_relu, the built-in plan at the H200's peaks, the
// fp32 track), compared with golden files in golden/llm_prompts/: a change to a template or to
// what fills it shows up as a diff. STITCH_UPDATE_GOLDEN=1 rewrites them (support/golden_file.h).
#include "agents/llm_context.h"

#include <gtest/gtest.h>

#include "agents/llm_test_run.h"
#include "support/golden_file.h"

namespace stitch::agents {
namespace {

namespace fs = std::filesystem;

const fs::path kTests = STITCH_TEST_DATA_DIR;
constexpr std::string_view kProgram = "#include \"stitch/program.h\"\n// (the program)\n";

void expect_prompt_golden(const std::string& name, const llm::PromptValues& values) {
  auto prompt = llm::render_prompt(name, values);
  ASSERT_TRUE(prompt.ok()) << prompt.error().message;
  stitch::testing::expect_golden(
      kTests / "agents" / "golden" / "llm_prompts" / (name + ".md"),
      "<!-- system -->\n" + prompt->system + "\n<!-- user -->\n" + prompt->user);
}

Feedback wrong_feedback() {
  Feedback feedback;
  feedback.outcome = Outcome::wrong;
  feedback.reason = "output 0 differs from the reference";
  WrongOutput wrong;
  wrong.where = "set 0";
  wrong.check = {0, false, 0.0123, 4097, 1.8e-4, 512, 4096, 0};
  wrong.elements = 524288;
  feedback.wrong_outputs = {wrong};
  feedback.suggestion = {SuggestionRule::fix_tail_handling,
                         "Errors start at element 4096: check the bounds of the last tile."};
  return feedback;
}

TEST(LlmPrompts, GoldenForABundledTask) {
  const fs::path run_dir = fs::temp_directory_path() / "stitch_llm_prompts_test";
  testing::make_llm_test_run(run_dir);
  auto loaded = load_prompt_task(run_dir, testing::llm_test_plan_file(run_dir), nullptr, "sm_90",
                                 Track::fp32);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const PromptTask& task = *loaded;
  expect_prompt_golden("planner", planner_values(task, std::nullopt));
  expect_prompt_golden("coder_generate", coder_generate_values(task, -1));
  expect_prompt_golden("coder_revise",
                       coder_revise_values(task, -1, std::string(kProgram), wrong_feedback()));
  Feedback passed;
  passed.outcome = Outcome::passed;
  passed.timed = true;
  passed.median_ms = 0.0412;
  passed.synced_median_ms = 0.0415;
  passed.launches_per_forward = 1;
  passed.baselines = {{"eager", 0.0550, 0.0412, 1.335}};
  passed.profile = {{"sm90_xmma_gemm_f32f32_tf32f32", 0.0398, "compute", 35.0, 71.5}};
  passed.suggestion = {SuggestionRule::keep_going, "Faster than every baseline."};
  expect_prompt_golden("verifier_analysis",
                       verifier_analysis_values(task, std::string(kProgram), passed));
  expect_prompt_golden(
      "replan", replan_values(task, "{\"summary\": \"v1\"}", "stagnation: three wrong attempts",
                              wrong_feedback()));
  fs::remove_all(run_dir);
}

}  // namespace
}  // namespace stitch::agents
