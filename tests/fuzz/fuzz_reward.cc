// Fuzz target for what the reward reads from outside: reward.json (reward/reward.h, stored by the
// reward service and read back) and the LLM judge's reply (reward/judge_llm.h: a model's text is
// hostile input). Any input must parse or fail with a message; parsed scores must lie in [1, 5].
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "llm/json_reply.h"
#include "reward/judge_llm.h"
#include "reward/reward.h"

namespace {

void fail(const char* what) {
  std::fprintf(stderr, "fuzz_reward: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_discarded()) {
    auto breakdown = stitch::reward::breakdown_from_json(doc);
    if (!breakdown.ok() && breakdown.error().message.empty()) fail("reward.json: no message");
  }
  auto reply = stitch::llm::read_json_reply(text);
  if (!reply.ok()) return 0;
  auto scores = stitch::reward::parse_judge_scores(reply->value, text);
  if (!scores.ok()) {
    if (scores.error().message.empty()) fail("judge reply: an error without a message");
    return 0;
  }
  for (const auto& score : scores->dimensions)
    if (!(score.score >= 1 && score.score <= 5)) fail("judge reply: a score outside [1, 5]");
  return 0;
}
