// The built-in Planner (option ladder, refusal), Coder (variants, retries chosen by the feedback),
// program variants and the refine policy, on the Planner's own fixture graphs; one refined program
// is built with nvcc to prove the knobs produce code that compiles.
#include <gtest/gtest.h>

#include <fstream>

#include "agents/builtin_roles.h"
#include "agents/program_variant.h"
#include "agents/refine.h"
#include "plan/plan_json.h"
#include "plan/planner.h"
#include "util/fs.h"
#include "util/process.h"
#include "verify/build/compiler.h"
#include "verify/feedback.h"

namespace stitch::agents {
namespace {

using nlohmann::json;

const fs::path kData = fs::path(STITCH_SOURCE_DIR) / "tests/plan/data";

class BuiltinRolesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            fmt::format("builtin_roles_test_{}_{}", ::getpid(),
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "plans");
  }
  void TearDown() override { fs::remove_all(root_); }

  void use_graph(const std::string& task) {
    fs::copy_file(kData / (task + ".graph.json"), root_ / "graph.json",
                  fs::copy_options::overwrite_existing);
  }
  PlanRequest plan_request(int version, std::vector<json> tried = {}) {
    PlanRequest request;
    request.run_dir = root_;
    request.version = version;
    request.plan_file = root_ / fmt::format("plans/plan.v{}.json", version);
    request.tried_options = std::move(tried);
    return request;
  }
  CodeRequest code_request(const fs::path& plan_file, std::vector<json> tried = {},
                           std::optional<std::string> rule = std::nullopt) {
    CodeRequest request;
    request.run_dir = root_;
    request.plan_file = plan_file;
    request.out_dir = root_ / fmt::format("attempt{}", ++attempts_) / "src";
    request.tried_variants = std::move(tried);
    if (rule) {
      request.feedback = root_ / fmt::format("feedback{}.json", attempts_);
      Feedback feedback;
      feedback.suggestion.rule = enum_from_name<SuggestionRule>(*rule).value();
      EXPECT_TRUE(write_feedback(*request.feedback, feedback).ok());
    }
    return request;
  }
  static std::string source_of(const CodeOutcome& outcome) {
    auto text = read_file(outcome.draft->sources.at(0));
    return text.ok() ? *text : "";
  }

  fs::path root_;
  int attempts_ = 0;
};

TEST_F(BuiltinRolesTest, PlannerWalksTheLadderAndRefusesUncoveredGraphs) {
  use_graph("plan_gemm_tf32x3");
  BuiltinPlanner planner;
  auto first = planner.plan(plan_request(1));
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_TRUE(first->draft.has_value()) << first->refusal.reason;
  EXPECT_EQ(first->draft->options["rung"], "defaults");
  EXPECT_FALSE(first->draft->subtask_ids.empty());
  EXPECT_TRUE(fs::exists(root_ / "plans/plan.v1.json"));

  auto second = planner.plan(plan_request(2, {first->draft->options}));
  ASSERT_TRUE(second.ok() && second->draft.has_value());
  EXPECT_EQ(second->draft->options["rung"], "strict FP32 GEMMs");
  auto strict_plan = plan::load_plan((root_ / "plans/plan.v2.json").string());
  ASSERT_TRUE(strict_plan.ok());
  for (const auto& subtask : strict_plan->subtasks)
    EXPECT_EQ(subtask.tunables.count("split_tf32x3"), 0u) << subtask.id;

  auto exhausted = planner.plan(plan_request(5, BuiltinPlanner::option_ladder()));
  ASSERT_TRUE(exhausted.ok());
  EXPECT_FALSE(exhausted->draft.has_value());
  EXPECT_TRUE(exhausted->exhausted);

  use_graph("plan_scan_refused");
  auto refused = planner.plan(plan_request(1));
  ASSERT_TRUE(refused.ok());
  EXPECT_FALSE(refused->draft.has_value());
  EXPECT_FALSE(refused->exhausted);
  EXPECT_NE(refused->refusal.reason.find("logcumsumexp"), std::string::npos)
      << refused->refusal.reason;
}

TEST_F(BuiltinRolesTest, CoderRetriesWhatTheFeedbackPointsAtAndStopsWhenOutOfIdeas) {
  use_graph("plan_gemm_tf32x3");
  BuiltinPlanner planner;
  ASSERT_TRUE(planner.plan(plan_request(1)).ok());
  const fs::path plan_file = root_ / "plans/plan.v1.json";
  BuiltinCoder coder({fs::path(STITCH_SOURCE_DIR) / "include", STITCH_SOURCE_DIR});

  auto first = coder.write(code_request(plan_file));
  ASSERT_TRUE(first.ok() && first->draft) << (first.ok() ? first->why_not : first.error().message);
  EXPECT_EQ(first->draft->variant, json::object());
  EXPECT_NE(source_of(*first).find("GemmTf32x3 mm0"), std::string::npos);
  EXPECT_NE(std::find(first->draft->libraries.begin(), first->draft->libraries.end(), "cublasLt"),
            first->draft->libraries.end());

  // Wrong by a small error → strict FP32 GEMMs first.
  auto precise = coder.write(code_request(plan_file, {json::object()}, "fix_precision"));
  ASSERT_TRUE(precise.ok() && precise->draft);
  EXPECT_TRUE(precise->draft->variant.contains("subtasks"));
  EXPECT_EQ(source_of(*precise).find("Tf32x3"), std::string::npos);  // neither 3xTF32 engine

  // A crash → no CUDA graph first.
  auto crash = coder.write(code_request(plan_file, {json::object()}, "fix_memory_access"));
  ASSERT_TRUE(crash.ok() && crash->draft);
  EXPECT_EQ(crash->draft->variant, (json{{"cuda_graph", false}}));

  auto options = BuiltinCoder::retry_variants(plan_file, "fix_precision");
  ASSERT_TRUE(options.ok());
  std::vector<json> everything = *options;
  everything.push_back(json::object());
  auto out_of_ideas = coder.write(code_request(plan_file, everything, "fix_precision"));
  ASSERT_TRUE(out_of_ideas.ok());
  EXPECT_FALSE(out_of_ideas->draft.has_value());
  EXPECT_NE(out_of_ideas->why_not.find("every variant"), std::string::npos);
}

TEST_F(BuiltinRolesTest, APlanTheEmitterRefusesIsNothingNewNotAnError) {
  use_graph("plan_broadcast_chain");
  BuiltinPlanner planner;
  ASSERT_TRUE(planner.plan(plan_request(1)).ok());
  const fs::path plan_file = root_ / "plans/plan.v1.json";
  auto plan = plan::load_plan(plan_file.string());
  ASSERT_TRUE(plan.ok());
  plan->subtasks.at(0).tunables["block"] = 100;  // no launch takes it: the emitter refuses
  ASSERT_TRUE(plan::save_plan(*plan, plan_file.string()).ok());
  BuiltinCoder coder({fs::path(STITCH_SOURCE_DIR) / "include", STITCH_SOURCE_DIR});
  auto outcome = coder.write(code_request(plan_file));
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  EXPECT_FALSE(outcome->draft.has_value());
  EXPECT_NE(outcome->why_not.find("emitter refuses"), std::string::npos) << outcome->why_not;
  EXPECT_NE(outcome->why_not.find("block 100"), std::string::npos) << outcome->why_not;
}

TEST_F(BuiltinRolesTest, VariantsApplyTunablesAndRejectWhatKernelsDoNotTake) {
  use_graph("plan_broadcast_chain");
  auto graph = ir::load_graph((root_ / "graph.json").string());
  ASSERT_TRUE(graph.ok());
  auto plan = plan::make_plan(*graph, {});
  ASSERT_TRUE(plan.ok());
  const std::string id = plan->subtasks.at(0).id;
  auto applied =
      apply_variant(*plan, {{"cuda_graph", false}, {"subtasks", {{id, {{"block", 512}}}}}});
  ASSERT_TRUE(applied.ok()) << applied.error().message;
  EXPECT_FALSE(applied->emit.cuda_graph);
  EXPECT_EQ(applied->plan.subtasks[0].tunables.at("block"), 512);
  auto program = codegen::emit_program(applied->plan, applied->emit);
  ASSERT_TRUE(program.ok()) << program.error().message;
  EXPECT_NE(program->source.find("shape, stream, 512)"), std::string::npos);

  EXPECT_FALSE(apply_variant(*plan, {{"subtasks", {{id, {{"block", 100}}}}}}).ok());
  EXPECT_FALSE(apply_variant(*plan, {{"subtasks", {{id, {{"split_tf32x3", 1}}}}}}).ok());
  EXPECT_FALSE(apply_variant(*plan, {{"subtasks", {{"s99_missing", {{"block", 128}}}}}}).ok());
  auto typo = apply_variant(*plan, {{"cuda_grahp", false}});
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message.find("cuda_grahp"), std::string::npos);
}

TEST_F(BuiltinRolesTest, RefineRanksByTheProfileAndSkipsWhatTheBestAlreadyHas) {
  use_graph("plan_gemm_tf32x3");
  auto graph = ir::load_graph((root_ / "graph.json").string());
  ASSERT_TRUE(graph.ok());
  auto plan = plan::make_plan(*graph, {});
  ASSERT_TRUE(plan.ok());
  const plan::Subtask& gemm = plan->subtasks.at(0);
  ASSERT_TRUE(gemm.tunables.count("split_tf32x3"));

  auto by_cost = refine_candidates(*plan, json::object(), std::nullopt);
  ASSERT_FALSE(by_cost.empty());
  EXPECT_NE(by_cost[0].label.find("strict FP32"), std::string::npos) << by_cost[0].label;
  EXPECT_EQ(by_cost.back().change, (json{{"cuda_graph", false}}));

  // Already strict and at block 512: neither is proposed again.
  json best = {{"subtasks", {{gemm.id, {{"split_tf32x3", 0}, {"block", 512}}}}},
               {"cuda_graph", false}};
  auto after = refine_candidates(*plan, best, std::nullopt);
  for (const auto& candidate : after) {
    EXPECT_EQ(candidate.label.find("strict FP32"), std::string::npos);
    EXPECT_EQ(candidate.label.find("block 512"), std::string::npos);
  }
  EXPECT_EQ(after.back().change, (json{{"cuda_graph", true}}));

  // The profile decides the order: time in a named kernel goes to its subtask.
  ProfileSummary profile;
  const std::string last_id = plan->subtasks.back().id;
  profile.kernels.push_back(
      {"void elementwise_kernel<" + last_id + "_body>", 5.0, "memory", std::nullopt, std::nullopt});
  profile.kernels.push_back({"sm90_xmma_gemm_f32f32", 1.0, "compute", std::nullopt, std::nullopt});
  auto shares = subtask_time_shares(*plan, profile);
  if (last_id != gemm.id) {
    EXPECT_NEAR(shares[last_id], 5.0 / 6.0, 1e-9);
    EXPECT_NEAR(shares[gemm.id], 1.0 / 6.0, 1e-9);
  }
}

// The fused attention's fp32 arithmetic is a variant knob: 3xTF32 (the plan's, split_tf32x3 = 1)
// or the FP32 FMA kernel (0), proposed by refine and accepted by apply_variant; on the tf32 track
// (tensor_math) there is nothing to switch.
TEST_F(BuiltinRolesTest, AttentionArithmeticIsAVariantKnobOnTheFp32Track) {
  use_graph("plan_attention_softmax");
  auto graph = ir::load_graph((root_ / "graph.json").string());
  ASSERT_TRUE(graph.ok());
  auto plan = plan::make_plan(*graph, {});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const plan::Subtask* attention = nullptr;
  for (const auto& subtask : plan->subtasks)
    if (subtask.kernel == "flash_attention") attention = &subtask;
  ASSERT_NE(attention, nullptr);
  if (attention->tunables.count("split_tf32x3") == 0)
    GTEST_SKIP() << "kAttentionFp32SplitTf32x3 is off: the plan already runs FMA";

  bool proposed = false;
  for (const auto& candidate : refine_candidates(*plan, json::object(), std::nullopt))
    proposed = proposed || candidate.label.find("FP32 FMA attention") != std::string::npos;
  EXPECT_TRUE(proposed);
  auto fma = apply_variant(*plan, {{"subtasks", {{attention->id, {{"split_tf32x3", 0}}}}}});
  ASSERT_TRUE(fma.ok()) << fma.error().message;
  for (const auto& subtask : fma->plan.subtasks)
    if (subtask.id == attention->id) EXPECT_EQ(subtask.tunables.at("split_tf32x3"), 0);
  auto program = codegen::emit_program(fma->plan, fma->emit);
  ASSERT_TRUE(program.ok()) << program.error().message;
  EXPECT_NE(program->source.find("launch_attention<"), std::string::npos);
  EXPECT_EQ(program->source.find("attention_mma.cuh"), std::string::npos);

  plan::PlanOptions tf32;
  tf32.tensor_math = plan::TensorMath::tf32;
  auto tf32_plan = plan::make_plan(*graph, tf32);
  ASSERT_TRUE(tf32_plan.ok());
  EXPECT_FALSE(
      apply_variant(*tf32_plan, {{"subtasks", {{attention->id, {{"split_tf32x3", 1}}}}}}).ok());
}

TEST_F(BuiltinRolesTest, ARefinedProgramCompiles) {
  if (!locate_nvcc().ok()) GTEST_SKIP() << "no nvcc here: cannot compile the refined program";
  use_graph("plan_gemm_bias_relu");
  auto graph = ir::load_graph((root_ / "graph.json").string());
  ASSERT_TRUE(graph.ok());
  auto plan = plan::make_plan(*graph, {});
  ASSERT_TRUE(plan.ok());
  json variant = {{"cuda_graph", false}, {"tune_iterations", 20}};
  for (const auto& subtask : plan->subtasks)
    if (tunable_may_be_overridden(subtask, "block", 128))
      variant["subtasks"][subtask.id] = {{"block", 128}};
  auto applied = apply_variant(*plan, variant);
  ASSERT_TRUE(applied.ok()) << applied.error().message;
  auto program = codegen::emit_program(applied->plan, applied->emit);
  ASSERT_TRUE(program.ok()) << program.error().message;
  ASSERT_TRUE(write_file_atomic(root_ / "program.cu", program->source).ok());
  SystemProcessRunner runner;
  NvccCompiler compiler(runner);
  BuildRequest request;
  request.sources = {root_ / "program.cu"};
  request.arch = "sm_90";
  request.libraries = program->libraries;
  request.output_path = root_ / "program.so";
  auto built = compiler.build(request);
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_TRUE(built->ok) << built->log.substr(0, 3000);
}

}  // namespace
}  // namespace stitch::agents
