// The tool-calling loop (tool_loop.h).
#include "llm/tool_loop.h"

#include <fmt/format.h>

namespace stitch::llm {

std::string ToolLoopClient::run_call(const ToolCall& call) {
  std::string answer;
  const ChatTool* tool = nullptr;
  for (const ChatTool& t : tools_)
    if (t.spec.name == call.name) tool = &t;
  nlohmann::json arguments = nlohmann::json::parse(
      call.arguments.empty() ? std::string("{}") : call.arguments, nullptr, false);
  if (tool == nullptr) {
    answer = fmt::format("error: there is no tool named '{}'", call.name);
  } else if (arguments.is_discarded() || !arguments.is_object()) {
    answer = "error: the arguments are not a JSON object";
  } else {
    Result<std::string> ran = tool->run(arguments);
    answer = ran.ok() ? *ran : "error: " + ran.error().message;
  }
  calls_.push_back({call.name, call.arguments, answer});
  return answer;
}

Result<ChatReply> ToolLoopClient::complete(const ChatRequest& request) {
  ChatRequest current = request;
  for (const ChatTool& tool : tools_)
    current.tools.push_back(tool.spec);
  Usage total;
  double seconds = 0;
  int attempts = 0;
  for (int round = 0;; ++round) {
    if (round == max_rounds_) current.tools.clear();  // answer now
    STITCH_ASSIGN_OR_RETURN(ChatReply reply, inner_.complete(current));
    total.prompt_tokens += reply.usage.prompt_tokens;
    total.completion_tokens += reply.usage.completion_tokens;
    total.reasoning_tokens += reply.usage.reasoning_tokens;
    total.estimated = total.estimated || reply.usage.estimated;
    seconds += reply.seconds;
    attempts += reply.attempts;
    if (reply.tool_calls.empty() || current.tools.empty()) {
      reply.usage = total;
      reply.seconds = seconds;
      reply.attempts = attempts;
      return reply;
    }
    ChatMessage assistant = text_message(Role::assistant, reply.content);
    assistant.tool_calls = reply.tool_calls;
    current.messages.push_back(std::move(assistant));
    for (const ToolCall& call : reply.tool_calls) {
      ChatMessage answer = text_message(Role::tool, run_call(call));
      answer.tool_call_id = call.id;
      current.messages.push_back(std::move(answer));
    }
  }
}

}  // namespace stitch::llm
