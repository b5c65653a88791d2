// Function calling for any role: a ChatClient that offers tools with every request and, while the
// model answers with tool calls, runs them and sends their results back, until the model answers
// in text (or the rounds run out, when the tools are withdrawn so that it must). The role above it
// sees one request and one reply, as with any other ChatClient; usage adds up over the rounds.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/chat.h"

namespace stitch::llm {

struct ChatTool {
  ToolSpec spec;
  // The tool's answer to arguments the model wrote (already parsed); an Error is sent back to
  // the model as the tool's answer ("error: ..."), not raised.
  std::function<Result<std::string>(const nlohmann::json& arguments)> run;
};

// One call the model made, for the role's record.
struct ToolCallRecord {
  std::string name;
  std::string arguments;
  std::string answer;
};

class ToolLoopClient final : public ChatClient {
 public:
  ToolLoopClient(ChatClient& inner, std::vector<ChatTool> tools, int max_rounds = 4)
      : inner_(inner), tools_(std::move(tools)), max_rounds_(max_rounds) {}
  Result<ChatReply> complete(const ChatRequest& request) override;
  const std::vector<ToolCallRecord>& calls() const { return calls_; }

 private:
  std::string run_call(const ToolCall& call);

  ChatClient& inner_;
  std::vector<ChatTool> tools_;
  int max_rounds_;
  std::vector<ToolCallRecord> calls_;
};

}  // namespace stitch::llm
