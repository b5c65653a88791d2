// The hybrid Coder (src/agents/hybrid_coder.h) with a scripted chat client and a fake subtask
// checker on tests/tasks/hybrid_logcumsumexp.py: the opaque cumsum goes to the LLM with its signature,
// the fragment is checked alone on its own program and stitched into the built-in program, and
// hybrid.json records which subtask came from whom; a retry revises the fragment from the
// feedback; a reply without the function is no_usable_output; hot subtasks come from a profile.
#include "agents/hybrid_coder.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "llm/scripted_chat_client.h"
#include "plan/plan_json.h"
#include "plan/planner.h"
#include "util/fs.h"

namespace stitch::agents {
namespace {

namespace fs = std::filesystem;
using llm::testing::ScriptedChatClient;
using llm::testing::text_reply;
using nlohmann::json;

std::string fragment(const std::string& name) {
  auto text = read_file(fs::path(STITCH_TEST_DATA_DIR) / "agents" / "hybrid" / name);
  EXPECT_TRUE(text.ok());
  return text.ok() ? *text : "";
}

class FakeChecker final : public SubtaskChecker {
 public:
  Result<AttemptResult> check(const SubtaskCheckRequest& request) override {
    requests.push_back(request);
    auto task = read_file(request.task_file);
    task_source = task.ok() ? *task : "";
    auto program = read_file(request.draft.sources.at(0));
    program_source = program.ok() ? *program : "";
    AttemptResult result;
    result.outcome = Outcome::hacked;
    result.reason = "calls_torch (static): fake";
    return result;
  }
  std::vector<SubtaskCheckRequest> requests;
  std::string task_source, program_source;
};

class HybridCoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_dir_ = fs::temp_directory_path() /
               ("stitch_hybrid_coder_" +
                std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(run_dir_);
    const fs::path tests = STITCH_TEST_DATA_DIR;
    ASSERT_TRUE(make_dirs(run_dir_ / "plans").ok());
    fs::copy_file(tests / "tasks" / "hybrid_logcumsumexp.py", run_dir_ / "task.py");
    fs::copy_file(tests / "plan" / "data" / "hybrid_logcumsumexp.graph.json", run_dir_ / "graph.json");
    auto graph = ir::load_graph((run_dir_ / "graph.json").string());
    ASSERT_TRUE(graph.ok());
    plan::PlanOptions options;
    options.keep_uncovered = true;
    auto made = plan::make_plan(*graph, options);
    ASSERT_TRUE(made.ok()) << made.error().message;
    plan_ = *made;
    ASSERT_TRUE(plan::save_plan(plan_, (run_dir_ / "plans" / "plan.v1.json").string()).ok());
  }
  void TearDown() override { fs::remove_all(run_dir_); }

  CodeRequest request(int attempt) const {
    CodeRequest request;
    request.run_dir = run_dir_;
    request.plan_file = run_dir_ / "plans" / "plan.v1.json";
    request.out_dir = run_dir_ / "attempts" / fmt::format("{:02d}", attempt) / "src";
    return request;
  }

  HybridCoder coder(std::vector<Result<llm::ChatReply>> script, SubtaskChecker* checker) {
    scripted_ = std::make_unique<ScriptedChatClient>(std::move(script));
    HybridCoderOptions options;
    options.llm.role.kind = llm::RoleKind::hybrid;
    options.llm.role.model = "coder-model";
    options.llm.arch = "sm_90";
    options.hot = 0;
    return HybridCoder(
        options,
        [this](const llm::Endpoint&, const fs::path&) -> Result<std::unique_ptr<llm::ChatClient>> {
          return std::unique_ptr<llm::ChatClient>(
              std::make_unique<llm::testing::ForwardingChatClient>(*scripted_));
        },
        checker);
  }

  json record(int attempt) const {
    auto text = read_file(run_dir_ / "attempts" / fmt::format("{:02d}", attempt) / "hybrid.json");
    EXPECT_TRUE(text.ok());
    return json::parse(text.ok() ? *text : "{}");
  }

  fs::path run_dir_;
  plan::Plan plan_;
  std::unique_ptr<ScriptedChatClient> scripted_;
};

TEST_F(HybridCoderTest, WritesTheOpaqueSubtaskChecksItAloneAndStitchesIt) {
  FakeChecker checker;
  const std::string code = fragment("logcumsumexp_correct.cu");
  HybridCoder hybrid = coder({text_reply("Here:\n```cuda\n" + code + "```\n")}, &checker);
  auto outcome = hybrid.write(request(1));
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  ASSERT_TRUE(outcome->draft) << outcome->why_not;

  // One request, stating the signature and the node.
  ASSERT_EQ(scripted_->requests.size(), 1u);
  const std::string prompt = scripted_->requests[0].messages.back().content;
  EXPECT_NE(prompt.find("cudaError_t subtask_s01_opaque_logcumsumexp_32x128(const float* in0, float* "
                        "out0, cudaStream_t stream)"),
            std::string::npos);
  EXPECT_NE(prompt.find("aten.logcumsumexp.default(in0, 1)"), std::string::npos);

  // Checked alone: the subgraph's task and the subtask's own program with the fragment.
  ASSERT_EQ(checker.requests.size(), 1u);
  EXPECT_NE(checker.task_source.find("\"aten.logcumsumexp.default\""), std::string::npos);
  EXPECT_NE(checker.program_source.find("__global__ void logcumsumexp_rows("), std::string::npos);
  EXPECT_EQ(checker.requests[0].dir,
            run_dir_ / "attempts" / "01" / "subtasks" / "s01_opaque_logcumsumexp_32x128");

  // Stitched into the built-in program; the fragment kept beside it.
  auto program = read_file(outcome->draft->sources.at(0));
  ASSERT_TRUE(program.ok());
  EXPECT_NE(program->find("STITCH_CHECK_CUDA(subtask_s01_opaque_logcumsumexp_32x128("),
            std::string::npos);
  EXPECT_TRUE(fs::exists(run_dir_ / "attempts" / "01" / "src" / "s01_opaque_logcumsumexp_32x128.cu"));

  const json doc = record(1);
  ASSERT_EQ(doc["subtasks"].size(), 3u);
  EXPECT_EQ(doc["subtasks"][0]["from"], "builtin");
  EXPECT_EQ(doc["subtasks"][1]["from"], "llm");
  EXPECT_EQ(doc["subtasks"][1]["skill"], "generate");
  EXPECT_EQ(doc["subtasks"][1]["alone"]["verdict"], "hacked");
  EXPECT_EQ(doc["subtasks"][1]["alone"]["reason"], "calls_torch (static): fake");
  EXPECT_EQ(doc["subtasks"][2]["from"], "builtin");
  const auto sources = read_subtask_sources(run_dir_ / "attempts" / "01");
  ASSERT_EQ(sources.size(), 3u);
  EXPECT_EQ(sources[1], (std::pair<std::string, std::string>{"s01_opaque_logcumsumexp_32x128", "llm"}));
}

TEST_F(HybridCoderTest, ARetryRevisesTheFragmentFromTheFeedback) {
  const std::string code = fragment("logcumsumexp_correct.cu");
  HybridCoder hybrid =
      coder({text_reply("```cuda\n" + code + "```\n"), text_reply("```cuda\n" + code + "```\n")},
            nullptr);
  ASSERT_TRUE(hybrid.write(request(1)).ok());
  const fs::path feedback = run_dir_ / "attempts" / "01" / "feedback.json";
  Feedback wrong;
  wrong.outcome = Outcome::wrong;
  wrong.reason = "output 0 differs";
  ASSERT_TRUE(write_feedback(feedback, wrong).ok());
  CodeRequest retry = request(2);
  retry.feedback = feedback;
  auto outcome = hybrid.write(retry);
  ASSERT_TRUE(outcome.ok() && outcome->draft);
  const std::string prompt = scripted_->requests.at(1).messages.back().content;
  EXPECT_NE(prompt.find("Your previous version"), std::string::npos);
  EXPECT_NE(prompt.find("__global__ void logcumsumexp_rows("), std::string::npos);
  EXPECT_EQ(record(2)["subtasks"][1]["skill"], "revise");
  EXPECT_EQ(record(2)["subtasks"][1]["alone"]["checked"], false);
}

TEST_F(HybridCoderTest, AReplyWithoutTheFunctionIsNoUsableOutputAfterOneReask) {
  HybridCoder hybrid =
      coder({text_reply("```cuda\n__global__ void k() {}\n```"), text_reply("I cannot do that.")},
            nullptr);
  auto outcome = hybrid.write(request(1));
  ASSERT_TRUE(outcome.ok());
  EXPECT_FALSE(outcome->draft);
  EXPECT_NE(outcome->why_not.find("no_usable_output"), std::string::npos);
  EXPECT_EQ(scripted_->requests.size(), 2u);
  EXPECT_NE(scripted_->requests[1].messages.back().content.find("subtask_s01_opaque_logcumsumexp_32x128"),
            std::string::npos);
  EXPECT_EQ(record(1)["subtasks"][1]["outcome"], "no_usable_output");
}

TEST_F(HybridCoderTest, HotSubtasksComeFromTheProfile) {
  ProfileSummary profile;
  profile.kernels = {{"elementwise_kernel<s02_elementwise_32x128_body>", 0.002, "memory", {}, {}},
                     {"sm90_xmma_gemm_f32", 0.010, "compute", {}, {}}};
  const auto none = choose_llm_subtasks(plan_, std::nullopt, 1);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].index, 1);
  EXPECT_NE(none[0].why.find("opaque: logcumsumexp is not covered"), std::string::npos);
  const auto hot = choose_llm_subtasks(plan_, profile, 1);
  ASSERT_EQ(hot.size(), 2u);
  EXPECT_EQ(hot[0].index, 1);
  EXPECT_EQ(hot[1].index, 2);  // the GEMM's kernel names no subtask: the next one is taken
  EXPECT_NE(hot[1].why.find("17%"), std::string::npos) << hot[1].why;
  EXPECT_EQ(choose_llm_subtasks(plan_, profile, 0).size(), 1u);
}

}  // namespace
}  // namespace stitch::agents
