#include "llm/length_handling.h"

#include <algorithm>
#include <cmath>

namespace stitch::llm {

namespace {

void add_costs(ChatReply& sum, const ChatReply& part) {
  sum.usage.prompt_tokens += part.usage.prompt_tokens;
  sum.usage.completion_tokens += part.usage.completion_tokens;
  sum.usage.reasoning_tokens += part.usage.reasoning_tokens;
  sum.seconds += part.seconds;
  sum.attempts += part.attempts;
}

}  // namespace

Result<ChatReply> complete_through_length(ChatClient& client, const ChatRequest& request,
                                          const LengthPolicy& policy) {
  STITCH_ASSIGN_OR_RETURN(ChatReply joined, client.complete(request));
  ChatRequest next = request;
  for (int round = 0; round < policy.max_rounds && joined.finish == FinishReason::length; ++round) {
    if (policy.strategy == LengthStrategy::continue_answer) {
      if (round == 0) {
        next.messages.push_back(text_message(Role::assistant, ""));
        next.messages.push_back(text_message(Role::user, std::string(kContinuePrompt)));
      }
      next.messages[next.messages.size() - 2].content = joined.content;  // the answer so far
      STITCH_ASSIGN_OR_RETURN(ChatReply part, client.complete(next));
      joined.content += part.content;
      joined.reasoning += part.reasoning;
      joined.tool_calls.insert(joined.tool_calls.end(), part.tool_calls.begin(),
                               part.tool_calls.end());
      joined.finish = part.finish;
      add_costs(joined, part);
      continue;
    }
    int64_t budget = next.max_tokens.value_or(policy.default_budget);
    if (budget >= policy.max_budget) break;
    next.max_tokens = std::min<int64_t>(
        policy.max_budget, static_cast<int64_t>(std::ceil(budget * policy.budget_growth)));
    STITCH_ASSIGN_OR_RETURN(ChatReply larger, client.complete(next));
    add_costs(larger, joined);
    joined = std::move(larger);
  }
  return joined;
}

}  // namespace stitch::llm
