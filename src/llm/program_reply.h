// Asking a model for a program: one request, the program read out of the reply (extract.h), and
// one re-ask carrying the reason when the reply holds no usable program. The exchange's record
// (llm_coder.json in an attempt directory) says what was asked of whom, what came back, the
// tokens and the cost; exchange_summary_from_json reads it back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/chat.h"
#include "llm/config.h"
#include "llm/extract.h"
#include "llm/json_reply.h"
#include "util/result.h"

namespace stitch::llm {

struct ProgramExchange {
  ProgramExtraction extraction;    // of the last reply
  std::vector<ChatReply> replies;  // 1, or 2 after a re-ask
  bool reasked = false;
  Usage usage() const;  // summed over the replies
};

// The message that re-asks for the program after `failure`.
ChatMessage program_reask_message(const NoUsableOutput& failure);

// Sends `request`; on a reply without a usable program, re-asks once. An Error only when the
// client fails.
Result<ProgramExchange> ask_for_program(ChatClient& client, ChatRequest request);

// The exchange as recorded: format "stitchcuda.llm_exchange" version 1 — skill, model, api_base,
// outcome (usable | no_usable_output) with the source note or the reason and detail, reasked,
// each reply's finish/model/tokens/seconds, the token totals and the cost in USD (null when the
// config prices no such model).
nlohmann::json program_exchange_record(const ProgramExchange& exchange, std::string_view skill,
                                       const RoleConfig& role, const PriceTable& prices);

// The same record for a JSON answer (json_reply.h: the Planner's plan, the Verifier's analysis):
// outcome usable, or no_usable_output with the reason; `repaired` when the JSON needed mending.
nlohmann::json answer_exchange_record(const JsonExchange& exchange, std::string_view skill,
                                      const RoleConfig& role, const PriceTable& prices);

// What the loop reads back from a record (token budgets, cost totals, reports).
struct ExchangeSummary {
  std::string skill;
  std::string model;
  StepOutcome outcome = StepOutcome::no_usable_output;
  std::optional<UnusableReason> reason;  // no_usable_output only
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  std::optional<double> cost_usd;
};
// The record's reader; an Error (bad input) for a document that is not a version 1 record.
Result<ExchangeSummary> exchange_summary_from_json(const nlohmann::json& doc);

}  // namespace stitch::llm
