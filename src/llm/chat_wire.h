// The OpenAI chat-completions wire format: a ChatRequest as the JSON body POSTed to
// {api_base}/chat/completions, a non-streamed response body (or a streamed one, chunk by chunk:
// StreamAssembler) read back into a ChatReply, and a ChatReply as the JSON a transcript keeps
// (reply_to_json, with its reader reply_from_json beside it).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "llm/chat.h"
#include "util/result.h"

namespace stitch::llm {

struct WireOptions {
  bool max_completion_tokens = false;  // the budget as max_completion_tokens (reasoning models)
  bool response_format = true;         // send request.response_schema as response_format
};

// Whether a request goes out as a reasoning model's: the endpoint says so, or the request sets
// reasoning_effort (only reasoning models take it).
bool sends_max_completion_tokens(const Endpoint& endpoint, const ChatRequest& request);

nlohmann::json request_to_wire(const ChatRequest& request, const WireOptions& options);

FinishReason finish_reason_from_wire(std::string_view text);
// prompt_tokens, completion_tokens, completion_tokens_details.reasoning_tokens (absent: 0).
Usage usage_from_wire(const nlohmann::json& usage);

// A non-streamed response body. An Error when it is no chat completion (no choices, an error
// object, not an object).
Result<ChatReply> reply_from_wire(const nlohmann::json& body);

// A reasoning model may answer in its reasoning field alone: then that is the answer too.
void take_answer_from_reasoning(ChatReply& reply);

// Assembles a streamed reply from its `data:` payloads: content and reasoning deltas appended,
// tool-call deltas joined by their index, the finish reason and the usage chunk
// (stream_options.include_usage) kept, `[DONE]` noted.
class StreamAssembler {
 public:
  // One event's data. An Error for a payload that is neither JSON nor [DONE], or an error object.
  Status apply(std::string_view data);
  bool done() const { return done_; }
  // Whether the stream said why it ended (a finish_reason); a stream cut before that is a drop.
  bool finished() const { return finish_seen_; }
  ChatReply reply() const;

 private:
  ChatReply reply_;
  std::map<int64_t, ToolCall> tool_calls_;  // by the delta's index
  bool done_ = false;
  bool finish_seen_ = false;
  bool usage_seen_ = false;
  int64_t text_events_ = 0;  // choice deltas carrying text: the token estimate without usage
};

// Transcripts: a reply as JSON and back.
nlohmann::json reply_to_json(const ChatReply& reply);
Result<ChatReply> reply_from_json(const nlohmann::json& json);
nlohmann::json usage_to_json(const Usage& usage);
Usage usage_from_json(const nlohmann::json& json);

}  // namespace stitch::llm
