// The LLM judge through the scripted chat client: the prompt carries docs/rubric.md's rubric (one
// source of truth) and the program; the reply is read strictly, scores clamped, stray quotes noted,
// a bad answer re-asked once; and the rubric itself has four dimensions with anchored scales.
#include <gtest/gtest.h>

#include "llm/json_reply.h"
#include "llm/scripted_chat_client.h"
#include "reward/judge_llm.h"
#include "reward/rubric.h"
#include "util/fs.h"

namespace stitch::reward {
namespace {

using llm::testing::ScriptedChatClient;
using llm::testing::text_reply;

const fs::path kData = fs::path(STITCH_TEST_DATA_DIR) / "reward" / "data";

AttemptEvidence fused_own() {
  auto evidence =
      read_attempt_evidence(kData / "fused_own", {kData / "graph.json", {}, {}}, nullptr);
  EXPECT_TRUE(evidence.ok());
  return *evidence;
}

std::string answer(int anti, int engineering, int coverage, int compliance,
                   const std::string& quote = "__shared__ float xs[kDepth][kTile + 4];") {
  nlohmann::json scores;
  int values[] = {anti, engineering, coverage, compliance};
  for (size_t d = 0; d < kDimensionCount; ++d)
    scores[std::string(kDimensionNames[d])] = {{"score", values[d]}, {"evidence", {quote}}};
  return "Here is my review.\n```json\n" + nlohmann::json{{"scores", scores}}.dump() + "\n```";
}

TEST(LlmJudgeTest, ScoresComeFromTheReplyAndThePromptCarriesTheRubric) {
  ScriptedChatClient client({text_reply(answer(5, 4, 5, 3))});
  LlmJudge judge(client, {.model = "judge-model"});
  auto scores = judge.judge(fused_own());
  ASSERT_TRUE(scores.ok()) << scores.error().message;
  EXPECT_EQ(scores->judge, JudgeKind::llm);
  EXPECT_EQ((*scores)[Dimension::cuda_engineering].score, 4.0);
  EXPECT_EQ((*scores)[Dimension::skill_compliance].score, 3.0);
  EXPECT_TRUE(scores->notes.empty()) << scores->notes.front();
  ASSERT_EQ(client.requests.size(), 1u);
  const llm::ChatRequest& request = client.requests[0];
  EXPECT_EQ(request.model, "judge-model");
  ASSERT_EQ(request.messages.size(), 2u);
  auto rubric = rubric_text();
  ASSERT_TRUE(rubric.ok());
  EXPECT_NE(request.messages[0].content.find(*rubric), std::string::npos);
  EXPECT_NE(request.messages[1].content.find("gemm_bias_relu_tiled"), std::string::npos);
  EXPECT_NE(request.messages[1].content.find("aten.addmm.default"), std::string::npos);
  // The combined reward of an LLM judge's scores.
  auto reward = score_attempt(fused_own(), {}, judge);
  EXPECT_FALSE(reward.ok());  // the script has no reply left: the client's error comes back
}

TEST(LlmJudgeTest, OutOfRangeScoresAreClampedAndStrayQuotesNoted) {
  ScriptedChatClient client({text_reply(answer(7, 0, 5, 3, "uses wgmma everywhere"))});
  LlmJudge judge(client, {.model = "m"});
  auto scores = judge.judge(fused_own());
  ASSERT_TRUE(scores.ok());
  EXPECT_EQ((*scores)[Dimension::anti_hacking].score, 5.0);
  EXPECT_EQ((*scores)[Dimension::cuda_engineering].score, 1.0);
  int clamped = 0, stray = 0;
  for (const std::string& note : scores->notes) {
    clamped += note.find("clamped") != std::string::npos;
    stray += note.find("quote not found") != std::string::npos;
  }
  EXPECT_EQ(clamped, 2);
  EXPECT_EQ(stray, 4);
}

TEST(LlmJudgeTest, AnIncompleteAnswerIsAskedForAgainOnce) {
  std::string missing = R"({"scores": {"anti_hacking": {"score": 5, "evidence": []}}})";
  ScriptedChatClient client({text_reply(missing), text_reply(answer(4, 4, 4, 4))});
  LlmJudge judge(client, {.model = "m"});
  auto scores = judge.judge(fused_own());
  ASSERT_TRUE(scores.ok()) << scores.error().message;
  EXPECT_EQ(client.requests.size(), 2u);
  EXPECT_NE(client.requests[1].messages.back().content.find("cuda_engineering"), std::string::npos);
  ScriptedChatClient stubborn({text_reply(missing), text_reply("no JSON at all")});
  LlmJudge judge2(stubborn, {.model = "m"});
  EXPECT_FALSE(judge2.judge(fused_own()).ok());
}

TEST(LlmJudgeTest, StrictTypes) {
  EXPECT_FALSE(parse_judge_scores(nlohmann::json::parse(R"({"anti_hacking": 5})"), "").ok());
  auto reply = llm::read_json_reply(answer(3, 3, 3, 3));
  ASSERT_TRUE(reply.ok());
  EXPECT_TRUE(parse_judge_scores(reply->value, "").ok());
  nlohmann::json text_score = reply->value;
  text_score["scores"]["operator_coverage"]["score"] = "high";
  EXPECT_FALSE(parse_judge_scores(text_score, "").ok());
  nlohmann::json bad_quote = reply->value;
  bad_quote["scores"]["anti_hacking"]["evidence"] = {1, 2};
  EXPECT_FALSE(parse_judge_scores(bad_quote, "").ok());
}

TEST(RubricTest, TheDocIsThePromptsSource) {
  auto doc = read_file(fs::path(STITCH_SOURCE_DIR) / "docs" / "rubric.md");
  ASSERT_TRUE(doc.ok());
  auto section = rubric_section(*doc);
  ASSERT_TRUE(section.ok()) << section.error().message;
  auto embedded = rubric_text();
  ASSERT_TRUE(embedded.ok());
  EXPECT_EQ(*section, *embedded) << "the embedded rubric is stale: rebuild";
  for (std::string_view name : kDimensionNames) {
    size_t at = embedded->find("### " + std::string(name));
    ASSERT_NE(at, std::string_view::npos) << name;
    std::string_view part = embedded->substr(at, embedded->find("### ", at + 4) - at);
    for (const char* anchor : {"Criteria:", "- **1**", "- **3**", "- **5**"})
      EXPECT_NE(part.find(anchor), std::string_view::npos) << name << " lacks " << anchor;
  }
  EXPECT_FALSE(rubric_section("no markers here").ok());
}

}  // namespace
}  // namespace stitch::reward
