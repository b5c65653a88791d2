// What to do with a reply cut by its token budget (finish_reason length): continue it — send the
// partial answer back as the assistant's turn, ask for the rest, join the parts — or ask again
// with a larger budget. One small function over any ChatClient.
#pragma once

#include <cstdint>

#include "llm/chat.h"
#include "util/enum_names.h"

namespace stitch::llm {

enum class LengthStrategy : uint8_t { continue_answer, larger_budget };
inline constexpr std::array<std::string_view, 2> kLengthStrategyNames = {"continue",
                                                                         "larger_budget"};
constexpr const auto& enum_names(LengthStrategy) { return kLengthStrategyNames; }
static_assert(names_every_enumerator(LengthStrategy::larger_budget));

struct LengthPolicy {
  LengthStrategy strategy = LengthStrategy::continue_answer;
  int max_rounds = 2;             // continuations, or resends with a larger budget
  double budget_growth = 2;       // larger_budget: max_tokens × this per round
  int64_t max_budget = 32768;     // larger_budget: never above this
  int64_t default_budget = 4096;  // larger_budget, when the request set no max_tokens
};

// The words sent to ask for the rest of a cut answer.
inline constexpr std::string_view kContinuePrompt =
    "Your answer was cut off by the length limit. Continue exactly where it stopped: do not "
    "repeat anything, do not start over, no preamble.";

// Sends `request`; while the reply is cut by length and rounds remain, continues or resends it
// per `policy`. The reply returned: continue_answer joins the contents (and reasoning) of every
// part and sums their usage, seconds and attempts; larger_budget is the last reply, with usage
// summed over all. Its finish reason is the last part's (still length when rounds ran out).
Result<ChatReply> complete_through_length(ChatClient& client, const ChatRequest& request,
                                          const LengthPolicy& policy = {});

}  // namespace stitch::llm
