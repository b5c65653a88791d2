// Asking a model for a program, with one re-ask (program_reply.h).
#include "llm/program_reply.h"

#include <fmt/format.h>

#include "util/json_fields.h"

namespace stitch::llm {

using nlohmann::json;

Usage ProgramExchange::usage() const {
  Usage total;
  for (const ChatReply& reply : replies) {
    total.prompt_tokens += reply.usage.prompt_tokens;
    total.completion_tokens += reply.usage.completion_tokens;
    total.reasoning_tokens += reply.usage.reasoning_tokens;
    total.estimated = total.estimated || reply.usage.estimated;
  }
  return total;
}

ChatMessage program_reask_message(const NoUsableOutput& failure) {
  return {Role::user,
          fmt::format("Your reply held no usable program: {}.\n\nReply with the complete "
                      "program.cu in one ```cuda block that includes \"stitch/program.h\" and "
                      "defines stitch_abi_version, stitch_init, stitch_forward, stitch_destroy and "
                      "stitch_last_error with exactly the header's signatures.",
                      failure.message()),
          {},
          {}};
}

Result<ProgramExchange> ask_for_program(ChatClient& client, ChatRequest request) {
  ProgramExchange exchange;
  for (int round = 0; round < 2; ++round) {
    STITCH_ASSIGN_OR_RETURN(ChatReply reply, client.complete(request));
    exchange.extraction = extract_program(reply);
    exchange.replies.push_back(reply);
    if (exchange.extraction.outcome == StepOutcome::usable || round == 1) break;
    request.messages.push_back({Role::assistant, reply.content, {}, {}});
    request.messages.push_back(program_reask_message(exchange.extraction.failure));
    exchange.reasked = true;
  }
  return exchange;
}

namespace {

// The fields every exchange record shares: who was asked, each reply, the token totals, the cost.
json exchange_record(const std::vector<ChatReply>& replies, const Usage& usage, bool reasked,
                     std::string_view skill, const RoleConfig& role, const PriceTable& prices) {
  const std::optional<double> cost = cost_usd(prices, role.model, usage);
  json reply_lines = json::array();
  for (const ChatReply& reply : replies) {
    reply_lines.push_back({{"finish", enum_name(reply.finish)},
                           {"model", reply.model},
                           {"prompt_tokens", reply.usage.prompt_tokens},
                           {"completion_tokens", reply.usage.completion_tokens},
                           {"reasoning_tokens", reply.usage.reasoning_tokens},
                           {"seconds", reply.seconds},
                           {"http_attempts", reply.attempts}});
    if (reply.usage.estimated) reply_lines.back()["tokens_estimated"] = true;  // see Usage
  }
  json record = {{"format", "stitchcuda.llm_exchange"},
                 {"version", 1},
                 {"skill", skill},
                 {"model", role.model},
                 {"api_base", role.endpoint.api_base},
                 {"reasked", reasked},
                 {"replies", reply_lines},
                 {"prompt_tokens", usage.prompt_tokens},
                 {"completion_tokens", usage.completion_tokens},
                 {"cost_usd", cost ? json(*cost) : json(nullptr)}};
  if (usage.estimated) record["tokens_estimated"] = true;
  return record;
}

}  // namespace

json program_exchange_record(const ProgramExchange& exchange, std::string_view skill,
                             const RoleConfig& role, const PriceTable& prices) {
  json record =
      exchange_record(exchange.replies, exchange.usage(), exchange.reasked, skill, role, prices);
  const ProgramExtraction& extraction = exchange.extraction;
  record["outcome"] = enum_name(extraction.outcome);
  if (extraction.outcome == StepOutcome::usable) {
    record["source_note"] = extraction.note;
  } else {
    record["reason"] = enum_name(extraction.failure.reason);
    record["detail"] = extraction.failure.detail;
  }
  return record;
}

json answer_exchange_record(const JsonExchange& exchange, std::string_view skill,
                            const RoleConfig& role, const PriceTable& prices) {
  json record =
      exchange_record(exchange.replies, exchange.usage, exchange.reasked, skill, role, prices);
  record["repaired"] = exchange.repaired;
  if (exchange.value) {
    record["outcome"] = enum_name(StepOutcome::usable);
  } else {
    record["outcome"] = enum_name(StepOutcome::no_usable_output);
    record["reason"] = enum_name(exchange.failure.reason);
    record["detail"] = exchange.failure.detail;
  }
  return record;
}

Result<ExchangeSummary> exchange_summary_from_json(const json& doc) {
  STITCH_TRY(check_file_format(doc, "LLM exchange record", "stitchcuda.llm_exchange", 1));
  ExchangeSummary summary;
  summary.skill = string_or(doc, "skill");
  summary.model = string_or(doc, "model");
  STITCH_ASSIGN_OR_RETURN(summary.outcome, read_enum<StepOutcome>(doc, "outcome"));
  if (summary.outcome == StepOutcome::no_usable_output) {
    STITCH_ASSIGN_OR_RETURN(UnusableReason reason, read_enum<UnusableReason>(doc, "reason"));
    summary.reason = reason;
  }
  STITCH_TRY(read_field(doc, "prompt_tokens", summary.prompt_tokens));
  STITCH_TRY(read_field(doc, "completion_tokens", summary.completion_tokens));
  summary.cost_usd = number_field(doc, "cost_usd");
  return summary;
}

}  // namespace stitch::llm
