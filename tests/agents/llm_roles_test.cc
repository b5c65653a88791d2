// The LLM Planner (llm_planner.h) and the Verifier's LLM analysis (llm_verifier.h) with scripted
// chat clients on a bundled task (llm_test_run.h): the plan read (and re-asked once), written where
// the Coder reads it, recorded with its tokens; a replan through the replan prompt; an unusable
// plan; the analysis added to a failed attempt and skipped for a fast one.
#include <gtest/gtest.h>

#include "agents/llm_plan_file.h"
#include "agents/llm_planner.h"
#include "agents/llm_test_run.h"
#include "agents/llm_verifier.h"
#include "llm/scripted_chat_client.h"
#include "util/fs.h"

namespace stitch::agents {
namespace {

namespace fs = std::filesystem;
using llm::testing::ScriptedChatClient;
using llm::testing::text_reply;
using nlohmann::json;

const json kPlanAnswer = {{"summary", "GEMM with bias and ReLU in one kernel"},
                          {"fusion_decisions", {"bias and ReLU in the GEMM's epilogue"}},
                          {"intermediate_buffers", json::array()},
                          {"kernels",
                           {{{"id", "k1_gemm_bias_relu"},
                             {"operations", {"addmm", "relu"}},
                             {"computes", "relu(x @ W^T + b)"},
                             {"inputs", {"x", "weight", "bias"}},
                             {"outputs", {"out"}},
                             {"implementation", "own kernel"},
                             {"parallelization", "64x64 output tiles"},
                             {"bound", "compute"}}}},
                          {"execution_order", {"k1_gemm_bias_relu"}},
                          {"weight_preparation", json::array()},
                          {"optimizations", {"shared-memory tiling"}},
                          {"host_strategy", "one stream"},
                          {"changes_from_previous", ""}};

class LlmRolesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_dir_ = fs::temp_directory_path() /
               ("stitch_llm_roles_" +
                std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    testing::make_llm_test_run(run_dir_);
  }
  void TearDown() override { fs::remove_all(run_dir_); }

  ChatClientFactory factory(std::vector<Result<llm::ChatReply>> script) {
    client_ = std::make_unique<ScriptedChatClient>(std::move(script));
    return [this](const llm::Endpoint&,
                  const fs::path& dir) -> Result<std::unique_ptr<llm::ChatClient>> {
      transcripts_.push_back(dir);
      return std::unique_ptr<llm::ChatClient>(
          std::make_unique<llm::testing::ForwardingChatClient>(*client_));
    };
  }
  template <class Options>
  Options role_options(const std::string& model) {
    Options options;
    options.role.kind = llm::RoleKind::llm;
    options.role.model = model;
    options.prices[model] = {1.0, 2.0};
    options.arch = "sm_90";
    return options;
  }
  PlanRequest plan_request(int version) const {
    PlanRequest request;
    request.run_dir = run_dir_;
    request.version = version;
    request.plan_file = run_dir_ / "plans" / fmt::format("plan.v{}.json", version);
    return request;
  }

  fs::path run_dir_;
  std::unique_ptr<ScriptedChatClient> client_;
  std::vector<fs::path> transcripts_;
};

TEST_F(LlmRolesTest, ThePlannersPlanIsReadReaskedOnceAndWrittenForTheCoder) {
  LlmPlanner planner(role_options<LlmPlannerOptions>("planner-model"),
                     factory({text_reply("Here it is: {\"summary\": "),
                              text_reply("```json\n" + kPlanAnswer.dump() + "\n```")}));
  const PlanRequest request = plan_request(1);
  auto outcome = planner.plan(request);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  ASSERT_TRUE(outcome->draft) << outcome->refusal.reason;
  EXPECT_EQ(outcome->draft->subtask_ids, std::vector<std::string>{"k1_gemm_bias_relu"});
  EXPECT_EQ(outcome->draft->tokens, 300);
  EXPECT_EQ(outcome->draft->options["planner"], "llm");
  ASSERT_EQ(client_->requests.size(), 2u);  // the re-ask carried the parse error
  const llm::ChatRequest& first = client_->requests[0];
  EXPECT_NE(first.messages.at(0).content.find("Planner"), std::string::npos);
  EXPECT_NE(first.messages.at(1).content.find("nn.Linear(in_features, out_features)"),
            std::string::npos);
  EXPECT_TRUE(first.response_schema);
  EXPECT_EQ(transcripts_.at(0), run_dir_ / "plans");

  auto plan = read_llm_plan_file(request.plan_file);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_TRUE(*plan);
  EXPECT_EQ((*plan)->summary, "GEMM with bias and ReLU in one kernel");
  const json record = *read_json_file(llm_planner_record_path(request.plan_file));
  EXPECT_EQ(record["outcome"], "usable");
  EXPECT_EQ(record["reasked"], true);
  EXPECT_DOUBLE_EQ(record["cost_usd"].get<double>(), (200 * 1.0 + 100 * 2.0) / 1e6);
}

TEST_F(LlmRolesTest, AReplanQuotesTheAbandonedPlanAndTheReason) {
  ASSERT_TRUE(
      write_file_atomic(
          run_dir_ / "plans" / "plan.v1.json",
          json{{"format", kLlmPlanFormat}, {"version", 1}, {"model", "m"}, {"plan", kPlanAnswer}}
              .dump())
          .ok());
  LlmPlanner planner(role_options<LlmPlannerOptions>("planner-model"),
                     factory({text_reply(kPlanAnswer.dump())}));
  PlanRequest request = plan_request(2);
  request.replan_reason = "the whole program failed 3 times in a row (last: wrong)";
  auto outcome = planner.plan(request);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  ASSERT_TRUE(outcome->draft);
  const std::string& user = client_->requests.at(0).messages.at(1).content;
  EXPECT_NE(user.find("# The abandoned plan"), std::string::npos) << user;
  EXPECT_NE(user.find("failed 3 times in a row (last: wrong)"), std::string::npos) << user;
  EXPECT_EQ(read_json_file(llm_planner_record_path(request.plan_file))->at("skill"), "replan");
}

TEST_F(LlmRolesTest, APlannerThatNeverAnswersInJsonGivesNoUsableOutput) {
  fs::remove(plan_request(1).plan_file);  // the fixture's built-in plan
  LlmPlanner planner(role_options<LlmPlannerOptions>("planner-model"),
                     factory({text_reply("no plan"), text_reply("still no plan")}));
  auto outcome = planner.plan(plan_request(1));
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  EXPECT_FALSE(outcome->draft);
  EXPECT_TRUE(outcome->no_usable_output);
  EXPECT_EQ(outcome->refusal.reason.rfind("no_usable_output (not_json)", 0), 0u)
      << outcome->refusal.reason;
  EXPECT_FALSE(fs::exists(plan_request(1).plan_file));
}

// The hardened Verifier's stand-in: a verdict and its feedback.json.
class StubVerifier final : public CandidateVerifier {
 public:
  AttemptResult result;
  std::vector<Diagnostic> compile_errors;
  Result<AttemptResult> verify(const VerifyJob& job) override {
    Feedback feedback;
    feedback.outcome = result.outcome;
    feedback.reason = result.reason;
    feedback.compile_errors = compile_errors;
    feedback.profile = {{"gemm_kernel", 0.8, "memory", 91.0, 12.0}};
    STITCH_TRY(write_feedback(job.attempt_dir / "feedback.json", feedback));
    return result;
  }
};

TEST_F(LlmRolesTest, AFailedAttemptGetsTheVerifiersAnalysis) {
  const fs::path attempt = run_dir_ / "attempts" / "01";
  ASSERT_TRUE(make_dirs(attempt / "src").ok());
  ASSERT_TRUE(write_file_atomic(attempt / "src" / "program.cu", "// the program\n").ok());
  StubVerifier stub;
  stub.result.outcome = Outcome::wrong;
  stub.result.reason = "output 0 mismatches";
  const json analysis = {{"bottleneck", "memory"},   {"kernel", "gemm_kernel"},
                         {"evidence", {"DRAM 91%"}}, {"optimisation", "fix the index"},
                         {"change", "row-major B"},  {"next_step", "optimise"}};
  LlmAnalysingVerifier verifier(stub, role_options<LlmVerifierOptions>("verifier-model"),
                                factory({text_reply(analysis.dump())}));
  CodeDraft draft;
  draft.sources = {attempt / "src" / "program.cu"};
  VerifyJob job{run_dir_, attempt, &draft, -1};
  auto result = verifier.verify(job);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->outcome, Outcome::wrong);  // the verdict is the Verifier's, unchanged
  auto read = read_verifier_analysis(attempt / kAnalysisFile);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->change, "row-major B");
  const std::string& user = client_->requests.at(0).messages.at(1).content;
  EXPECT_NE(user.find("// the program"), std::string::npos);
  EXPECT_NE(user.find("`gemm_kernel`"), std::string::npos) << user;
  EXPECT_EQ(read_json_file(attempt / kLlmVerifierRecord)->at("outcome"), "usable");
  EXPECT_EQ(transcripts_.at(0), attempt);

  // The Coder's next step revises attempt 01 with the analysis beside the built-in feedback.
  LlmCoderOptions coder_options = role_options<LlmCoderOptions>("coder-model");
  LlmCoder coder(coder_options,
                 factory({text_reply("no program this time"), text_reply("still none")}));
  CodeRequest request;
  request.run_dir = run_dir_;
  request.plan_file = testing::llm_test_plan_file(run_dir_);
  request.feedback = attempt / "feedback.json";
  request.out_dir = run_dir_ / "attempts" / "02" / "src";
  auto code = coder.write(request);
  ASSERT_TRUE(code.ok()) << code.error().message;
  const std::string& revise = client_->requests.at(0).messages.at(1).content;
  EXPECT_NE(revise.find("Outcome: **wrong** — output 0 mismatches"), std::string::npos) << revise;
  EXPECT_NE(revise.find("- Optimisation: fix the index"), std::string::npos) << revise;
}

// With a documentation index, the analysis of a compile error reads the passages the error names.
TEST_F(LlmRolesTest, TheAnalysisOfACompileErrorReadsTheDocumentationItNames) {
  const fs::path attempt = run_dir_ / "attempts" / "01";
  ASSERT_TRUE(make_dirs(attempt / "src").ok());
  ASSERT_TRUE(write_file_atomic(attempt / "src" / "program.cu", "// the program\n").ok());
  StubVerifier stub;
  stub.result.outcome = Outcome::compile_error;
  stub.compile_errors = {
      {"program.cu", 3, "error", R"(identifier "cudaMallocAsyncc" is undefined)", ""}};
  auto options = role_options<LlmVerifierOptions>("verifier-model");
  std::vector<std::string> queries;
  options.search_docs = [&](std::string_view query, int) -> Result<std::vector<rag::DocHit>> {
    queries.emplace_back(query);
    return std::vector<rag::DocHit>{{"/cuda/include/cuda_runtime_api.h", 7, 7, 1.0,
                                     "cudaError_t cudaMallocAsync(void** p, size_t n);\n"}};
  };
  const json analysis = {{"bottleneck", "library"}, {"kernel", ""},
                         {"evidence", {"typo"}},    {"optimisation", "none"},
                         {"change", "spell it"},    {"next_step", "optimise"}};
  LlmAnalysingVerifier verifier(stub, options, factory({text_reply(analysis.dump())}));
  CodeDraft draft;
  draft.sources = {attempt / "src" / "program.cu"};
  VerifyJob job{run_dir_, attempt, &draft, -1};
  ASSERT_TRUE(verifier.verify(job).ok());
  ASSERT_EQ(queries, std::vector<std::string>{"cudaMallocAsyncc "});
  EXPECT_TRUE(read_verifier_analysis(attempt / kAnalysisFile).ok());
  const std::string& user = client_->requests.at(0).messages.at(1).content;
  EXPECT_NE(user.find("### /cuda/include/cuda_runtime_api.h:7"), std::string::npos) << user;
  EXPECT_NE(user.find("cudaError_t cudaMallocAsync(void** p, size_t n);"), std::string::npos);
}

TEST_F(LlmRolesTest, AFastPassingAttemptIsNotAnalysed) {
  AttemptResult fast;
  fast.outcome = Outcome::passed;
  fast.timing = Timing{1.0, 0.9, 1.1};
  fast.baselines_ms = {{"eager", 2.0}};
  EXPECT_FALSE(wants_analysis(fast));
  AttemptResult slow = fast;
  slow.baselines_ms = {{"eager", 0.5}};
  EXPECT_TRUE(wants_analysis(slow));
  AttemptResult unusable;
  unusable.no_usable_output = true;
  EXPECT_FALSE(wants_analysis(unusable));
  AttemptResult no_gpu;
  no_gpu.state = VerifyState::no_gpu;
  EXPECT_FALSE(wants_analysis(no_gpu));
}

}  // namespace
}  // namespace stitch::agents
