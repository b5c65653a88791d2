// The LLM Coder (src/agents/llm_coder.h) with a scripted chat client on a bundled task
// (llm_test_run.h): skill 1, skill 2 from the last feedback.json, no_usable_output, client errors.
#include "agents/llm_coder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

#include "agents/llm_plan_file.h"
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

constexpr std::string_view kProgram = R"(#include <cuda_runtime.h>
#include "stitch/program.h"
extern "C" int stitch_abi_version(void) { return STITCH_ABI_VERSION; }
extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) { return 0; }
extern "C" int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) { return 0; }
extern "C" void stitch_destroy(void* state) {}
extern "C" const char* stitch_last_error(void* state) { return ""; }
)";

std::string fenced(std::string_view code) {
  return "```cuda\n" + std::string(code) + "```\n";
}

// A run directory with the task, its graph and plan v1, like the loop leaves it.
class LlmCoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_dir_ = fs::temp_directory_path() /
               ("stitch_llm_coder_" +
                std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    testing::make_llm_test_run(run_dir_);
  }
  void TearDown() override { fs::remove_all(run_dir_); }

  fs::path plan_file() const { return testing::llm_test_plan_file(run_dir_); }

  CodeRequest request(int attempt) const {
    CodeRequest request;
    request.run_dir = run_dir_;
    request.plan_file = plan_file();
    request.out_dir = run_dir_ / "attempts" / fmt::format("{:02d}", attempt) / "src";
    return request;
  }

  // An LLM Coder whose clients answer from `script` (one scripted conversation the fixture keeps,
  // so the requests can be read after the Coder's own client is gone); `transcripts` collects the
  // directories the factory was asked to save into.
  LlmCoder coder(std::vector<Result<llm::ChatReply>> script, DocSearch search_docs = {}) {
    scripted_ = std::make_unique<ScriptedChatClient>(std::move(script));
    client = scripted_.get();
    LlmCoderOptions options;
    options.role.kind = llm::RoleKind::llm;
    options.role.model = "coder-model";
    options.role.endpoint.api_base = "http://127.0.0.1:9/v1";
    options.role.temperature = 0.2;
    options.prices["coder-model"] = {1.0, 4.0};
    options.arch = "sm_90";
    options.search_docs = std::move(search_docs);
    return LlmCoder(options,
                    [this](const llm::Endpoint& endpoint,
                           const fs::path& dir) -> Result<std::unique_ptr<llm::ChatClient>> {
                      transcripts.push_back(dir);
                      EXPECT_EQ(endpoint.api_base, "http://127.0.0.1:9/v1");
                      return std::unique_ptr<llm::ChatClient>(
                          std::make_unique<llm::testing::ForwardingChatClient>(*scripted_));
                    });
  }

  fs::path run_dir_;
  std::unique_ptr<ScriptedChatClient> scripted_;
  std::vector<fs::path> transcripts;
  ScriptedChatClient* client = nullptr;
};

TEST_F(LlmCoderTest, FirstAttemptWritesTheProgramFromSkillOne) {
  LlmCoder llm_coder = coder({text_reply("Plan followed.\n" + fenced(kProgram))});
  const CodeRequest code_request = request(1);
  auto outcome = llm_coder.write(code_request);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  ASSERT_TRUE(outcome->draft) << outcome->why_not;
  const fs::path source = code_request.out_dir / "program.cu";
  EXPECT_EQ(outcome->draft->sources, std::vector<fs::path>{source});
  EXPECT_EQ(*read_file(source), kProgram);
  EXPECT_EQ(outcome->draft->label, "llm generate: coder-model");
  EXPECT_EQ(outcome->draft->tokens, 150);
  ASSERT_EQ(transcripts.size(), 1u);
  EXPECT_EQ(transcripts[0], code_request.out_dir.parent_path());  // the attempt directory

  const llm::ChatRequest& sent = client->requests.at(0);
  EXPECT_EQ(sent.model, "coder-model");
  EXPECT_EQ(sent.temperature, 0.2);
  ASSERT_EQ(sent.messages.size(), 2u);
  EXPECT_NE(sent.messages[0].content.find("You are the Coder"), std::string::npos);
  EXPECT_NE(sent.messages[1].content.find("nn.Linear(in_features, out_features)"),
            std::string::npos);
  EXPECT_NE(sent.messages[1].content.find("int stitch_init(const stitch_tensor* params"),
            std::string::npos);

  auto record = read_file(code_request.out_dir.parent_path() / kLlmCoderRecord);
  ASSERT_TRUE(record.ok());
  const json doc = json::parse(*record);
  EXPECT_EQ(doc["skill"], "generate");
  EXPECT_EQ(doc["outcome"], "usable");
  EXPECT_DOUBLE_EQ(doc["cost_usd"].get<double>(), (100 * 1.0 + 50 * 4.0) / 1e6);
}

// With a documentation index: the compile error's names are looked up before the request, and the
// model may call search_cuda_docs, whose answers go back to it; the record keeps the calls.
TEST_F(LlmCoderTest, TheDocumentationIsPrefetchedForErrorsAndOfferedAsATool) {
  const fs::path first = run_dir_ / "attempts" / "01";
  ASSERT_TRUE(make_dirs(first / "src").ok());
  ASSERT_TRUE(write_file_atomic(first / "src" / "program.cu", "cublasLtMatmulX();\n").ok());
  Feedback feedback;
  feedback.outcome = Outcome::compile_error;
  feedback.compile_errors = {
      {"program.cu", 1, "error", R"(identifier "cublasLtMatmulX" is undefined)", ""}};
  ASSERT_TRUE(write_feedback(first / "feedback.json", feedback).ok());
  std::vector<std::string> queries;
  std::mutex mutex;
  DocSearch search = [&](std::string_view query, int k) -> Result<std::vector<rag::DocHit>> {
    std::lock_guard lock(mutex);
    queries.emplace_back(query);
    return std::vector<rag::DocHit>{
        {"/cuda/include/cublasLt.h", 10, 12, 1.0, "cublasStatus_t cublasLtMatmul(int x);\n"}};
  };
  llm::ChatReply call = text_reply("", llm::FinishReason::tool_calls);
  call.tool_calls = {{"call-1", "search_cuda_docs", R"({"query": "cublasLtMatmulDescCreate"})"}};
  LlmCoder llm_coder = coder({call, text_reply(fenced(kProgram))}, search);
  CodeRequest code_request = request(2);
  code_request.feedback = first / "feedback.json";
  auto outcome = llm_coder.write(code_request);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  ASSERT_TRUE(outcome->draft) << outcome->why_not;

  ASSERT_EQ(client->requests.size(), 2u);
  const llm::ChatRequest& sent = client->requests[0];
  ASSERT_EQ(sent.tools.size(), 1u);
  EXPECT_EQ(sent.tools[0].name, "search_cuda_docs");
  const std::string& user = sent.messages.at(1).content;
  EXPECT_NE(user.find("## CUDA documentation for the errors"), std::string::npos) << user;
  EXPECT_NE(user.find("### /cuda/include/cublasLt.h:10-12"), std::string::npos) << user;
  ASSERT_GE(queries.size(), 2u);
  EXPECT_EQ(queries[0], "cublasLtMatmulX ");
  EXPECT_EQ(queries[1], "cublasLtMatmulDescCreate");
  const llm::ChatMessage& answer = client->requests[1].messages.back();
  EXPECT_EQ(answer.role, llm::Role::tool);
  EXPECT_EQ(answer.tool_call_id, "call-1");
  EXPECT_NE(answer.content.find("cublasStatus_t cublasLtMatmul(int x);"), std::string::npos);

  auto record = read_file(code_request.out_dir.parent_path() / kLlmCoderRecord);
  ASSERT_TRUE(record.ok());
  const json doc = json::parse(*record);
  ASSERT_EQ(doc["tool_calls"].size(), 1u);
  EXPECT_EQ(doc["tool_calls"][0]["name"], "search_cuda_docs");
}

TEST_F(LlmCoderTest, RetryRevisesTheLastProgramFromItsFeedback) {
  // Attempt 1 left a program and its feedback: a compile error.
  const fs::path first = run_dir_ / "attempts" / "01";
  ASSERT_TRUE(make_dirs(first / "src").ok());
  ASSERT_TRUE(write_file_atomic(first / "src" / "program.cu", "int broken(\n").ok());
  Feedback feedback;
  feedback.outcome = Outcome::compile_error;
  feedback.reason = "nvcc failed";
  feedback.compile_errors = {{"program.cu", 1, "error", "expected a ')'", "int broken("}};
  feedback.suggestion = {SuggestionRule::fix_compile_error, "Fix program.cu:1: expected a ')'"};
  ASSERT_TRUE(write_feedback(first / "feedback.json", feedback).ok());

  LlmCoder llm_coder = coder({text_reply(fenced(kProgram))});
  CodeRequest code_request = request(2);
  code_request.feedback = first / "feedback.json";
  auto outcome = llm_coder.write(code_request);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  ASSERT_TRUE(outcome->draft) << outcome->why_not;
  EXPECT_EQ(outcome->draft->label, "llm revise: coder-model");
  const std::string& user = client->requests.at(0).messages.at(1).content;
  EXPECT_NE(user.find("```cuda\nint broken(\n"), std::string::npos) << user;
  EXPECT_NE(user.find("- program.cu:1: expected a ')'"), std::string::npos) << user;
  EXPECT_NE(user.find("## Suggestion (fix_compile_error)"), std::string::npos) << user;
}

TEST_F(LlmCoderTest, NoUsableOutputIsTheRolesWhyNot) {
  LlmCoder llm_coder =
      coder({text_reply("I would rather not."), text_reply("```python\nprint('no')\n```")});
  const CodeRequest code_request = request(1);
  auto outcome = llm_coder.write(code_request);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  EXPECT_FALSE(outcome->draft);
  EXPECT_TRUE(outcome->no_usable_output);
  EXPECT_EQ(outcome->tokens, 300);  // both replies
  EXPECT_EQ(outcome->why_not,
            "no_usable_output (no_code): the reply's code blocks are not C++/CUDA (python)");
  EXPECT_EQ(client->requests.size(), 2u);  // one re-ask
  EXPECT_FALSE(fs::exists(code_request.out_dir / "program.cu"));
  const json doc = json::parse(*read_file(code_request.out_dir.parent_path() / kLlmCoderRecord));
  EXPECT_EQ(doc["outcome"], "no_usable_output");
  EXPECT_EQ(doc["reason"], "no_code");
}

TEST_F(LlmCoderTest, ClientFailureIsAnError) {
  LlmCoder llm_coder = coder({make_error(ErrorKind::machine, "connection refused")});
  auto outcome = llm_coder.write(request(1));
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.error().kind, ErrorKind::machine);
}

TEST_F(LlmCoderTest, TheLastReplysFailureReachesTheNextPrompt) {
  LlmCoder llm_coder = coder({text_reply(fenced(kProgram))});
  CodeRequest code_request = request(2);
  code_request.last_unusable = "attempt 01: no_usable_output (truncated): the program is cut off";
  auto outcome = llm_coder.write(code_request);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  ASSERT_TRUE(outcome->draft);
  const std::string& user = client->requests.at(0).messages.back().content;
  EXPECT_NE(user.find("# Your last reply"), std::string::npos) << user;
  EXPECT_NE(user.find("(attempt 01: no_usable_output (truncated): the program is cut off)"),
            std::string::npos)
      << user;
}

TEST_F(LlmCoderTest, TheVerifiersAnalysisReachesTheRevisePrompt) {
  const fs::path first = run_dir_ / "attempts" / "01";
  ASSERT_TRUE(make_dirs(first / "src").ok());
  ASSERT_TRUE(write_file_atomic(first / "src" / "program.cu", std::string(kProgram)).ok());
  Feedback feedback;
  feedback.outcome = Outcome::passed;
  feedback.suggestion = {SuggestionRule::profile_slowest, "Profile the slowest kernel."};
  ASSERT_TRUE(write_feedback(first / "feedback.json", feedback).ok());
  const json analysis = {{"bottleneck", "memory"},
                         {"kernel", "gemm_bias_relu"},
                         {"evidence", {"DRAM 91% of peak", "SM 12%"}},
                         {"optimisation", "tile the GEMM through shared memory"},
                         {"change", "stage 64x64 tiles of A and B"},
                         {"next_step", "optimise"}};
  ASSERT_TRUE(write_verifier_analysis(first / kAnalysisFile, analysis).ok());

  LlmCoder llm_coder = coder({text_reply(fenced(kProgram))});
  CodeRequest code_request = request(2);
  code_request.feedback = first / "feedback.json";
  ASSERT_TRUE(llm_coder.write(code_request).ok());
  const std::string& user = client->requests.at(0).messages.at(1).content;
  EXPECT_NE(user.find("## The Verifier's analysis"), std::string::npos) << user;
  EXPECT_NE(user.find("- Bottleneck: **memory** in `gemm_bias_relu`"), std::string::npos) << user;
  EXPECT_NE(user.find("- Evidence: DRAM 91% of peak"), std::string::npos);
  EXPECT_NE(user.find("- What to change: stage 64x64 tiles of A and B"), std::string::npos);
}

TEST_F(LlmCoderTest, AnLlmPlanIsThePlanOfThePrompt) {
  llm::LlmPlan plan;
  plan.summary = "one fused kernel";
  plan.kernels = {{"k1_fused",
                   {"addmm", "relu"},
                   "the GEMM with bias and ReLU fused",
                   {"x"},
                   {"out"},
                   "own kernel",
                   "one block per 64x64 tile",
                   "compute"}};
  plan.execution_order = {"k1_fused"};
  plan.host_strategy = "one stream, no graph";
  ASSERT_TRUE(write_llm_plan_file(plan_file(), plan, "planner-model").ok());
  LlmCoder llm_coder = coder({text_reply(fenced(kProgram))});
  ASSERT_TRUE(llm_coder.write(request(1)).ok());
  const std::string& user = client->requests.at(0).messages.at(1).content;
  EXPECT_NE(user.find("The Planner's plan: one fused kernel"), std::string::npos) << user;
  EXPECT_NE(user.find("- `k1_fused`: the GEMM with bias and ReLU fused"), std::string::npos);
  EXPECT_NE(user.find("one stream, no graph"), std::string::npos);
}

// Answers by the request's seed, from any thread: sample i's reply is script[seed].
class SeededClient final : public llm::ChatClient {
 public:
  explicit SeededClient(std::vector<std::string> script) : script_(std::move(script)) {}
  Result<llm::ChatReply> complete(const llm::ChatRequest& request) override {
    std::lock_guard lock(mutex_);
    labels.push_back(request.label);
    const size_t seed = static_cast<size_t>(request.seed.value_or(-1));
    if (seed >= script_.size()) return make_error(ErrorKind::machine, "no reply for that seed");
    return text_reply(script_[seed]);
  }
  std::vector<std::string> labels;

 private:
  std::mutex mutex_;
  std::vector<std::string> script_;
};

TEST_F(LlmCoderTest, SamplesGoOutTogetherAndComeBackInSampleOrder) {
  const std::string other = std::string(kProgram) + "// sample two\n";
  SeededClient seeded({fenced(kProgram), "no code at all", fenced(other)});
  LlmCoderOptions options;
  options.role.kind = llm::RoleKind::llm;
  options.role.model = "coder-model";
  options.role.samples = 3;
  std::mutex mutex;
  std::vector<fs::path> dirs;
  LlmCoder llm_coder(
      options,
      [&](const llm::Endpoint&, const fs::path& dir) -> Result<std::unique_ptr<llm::ChatClient>> {
        std::lock_guard lock(mutex);
        dirs.push_back(dir);
        return std::unique_ptr<llm::ChatClient>(
            std::make_unique<llm::testing::ForwardingChatClient>(seeded));
      });
  EXPECT_EQ(llm_coder.samples_per_step(), 3);
  std::vector<CodeRequest> requests = {request(1), request(2), request(3)};
  auto outcomes = llm_coder.write_samples(requests);
  ASSERT_EQ(outcomes.size(), 3u);
  for (const auto& outcome : outcomes)
    ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  ASSERT_TRUE(outcomes[0]->draft);
  EXPECT_TRUE(outcomes[1]->no_usable_output);
  ASSERT_TRUE(outcomes[2]->draft);
  EXPECT_EQ(*read_file(requests[0].out_dir / "program.cu"), kProgram);
  EXPECT_EQ(*read_file(requests[2].out_dir / "program.cu"), other);
  EXPECT_EQ(dirs.size(), 3u);
  std::sort(seeded.labels.begin(), seeded.labels.end());
  EXPECT_EQ(seeded.labels.front(), "coder-sample-00");
  EXPECT_EQ(seeded.labels.back(), "coder-sample-02");
}

}  // namespace
}  // namespace stitch::agents
