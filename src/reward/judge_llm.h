// The LLM rubric judge: the rubric of docs/rubric.md (rubric.h) and the attempt's evidence rendered
// into src/reward/prompts/judge.md, sent through the LLM client (llm/chat.h), and the JSON reply
// read strictly (llm/json_reply.h): every dimension present with a numeric score and evidence
// quotes; scores outside 1-5 clamped and noted; quotes not found in what the judge was shown noted.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "llm/chat.h"
#include "reward/reward.h"

namespace stitch::reward {

struct LlmJudgeOptions {
  std::string model;
  std::optional<double> temperature = 0.0;
  std::optional<int64_t> max_tokens = 2048;
  size_t max_program_chars = 60000;  // the program shown is cut here (noted in the prompt)
};

// The prompt's messages for an attempt (exposed for tests and for a dataset of judge prompts).
Result<std::vector<llm::ChatMessage>> judge_messages(const AttemptEvidence& evidence,
                                                     const LlmJudgeOptions& options);

// A reply's JSON as rubric scores. An Error names what is missing or of the wrong type; `shown` is
// the text the judge was shown, for checking its quotes.
Result<RubricScores> parse_judge_scores(const nlohmann::json& reply, std::string_view shown);

class LlmJudge final : public RubricJudge {
 public:
  LlmJudge(llm::ChatClient& client, LlmJudgeOptions options)
      : client_(client), options_(std::move(options)) {}
  // An Error when the client fails or the model never answers usable JSON (after one re-ask).
  Result<RubricScores> judge(const AttemptEvidence& evidence) override;

 private:
  llm::ChatClient& client_;
  LlmJudgeOptions options_;
};

}  // namespace stitch::reward
