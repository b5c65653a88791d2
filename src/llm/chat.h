// The contract between the LLM roles and the OpenAI-compatible chat client: what a role asks
// (ChatRequest), what comes back (ChatReply), and the interface that sends it (ChatClient). The
// HTTP client (libcurl, streaming, retries, transcripts) implements ChatClient; tests use fakes
// and a scripted server. Nothing here knows about plans, programs or verdicts.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/enum_names.h"
#include "util/result.h"

namespace stitch::llm {

namespace fs = std::filesystem;

enum class Role : uint8_t { system, user, assistant, tool };
inline constexpr std::array<std::string_view, 4> kRoleNames = {"system", "user", "assistant",
                                                               "tool"};
constexpr const auto& enum_names(Role) { return kRoleNames; }
static_assert(names_every_enumerator(Role::tool));

// A function call the model asked for; `arguments` is the JSON text exactly as the model wrote it
// (it may not parse: the caller decides what to do with that).
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;
  bool operator==(const ToolCall&) const = default;
};

struct ChatMessage {
  Role role = Role::user;
  std::string content;
  std::vector<ToolCall> tool_calls;  // assistant messages that called tools
  std::string tool_call_id;          // Role::tool: the call this message answers
  bool operator==(const ChatMessage&) const = default;
};

// A plain message (GCC's -Wextra warns on aggregate initialisers that leave members out).
inline ChatMessage text_message(Role role, std::string content) {
  ChatMessage message;
  message.role = role;
  message.content = std::move(content);
  return message;
}

// A function the model may call: `parameters` is its JSON schema.
struct ToolSpec {
  std::string name;
  std::string description;
  nlohmann::json parameters = nlohmann::json::object();
};

// Where a role's requests go and how they are sent. The API key is never held here: only the name
// of the environment variable that holds it, read when a request is sent and written nowhere.
struct Endpoint {
  std::string api_base;     // e.g. http://127.0.0.1:8000/v1
  std::string api_key_env;  // empty: no Authorization header
  double timeout_s = 600;   // one request, streaming included (no byte for this long: a stall)
  int max_retries = 4;      // on 429, 5xx, timeouts and dropped connections
  // A reasoning model (OpenAI o-series, gpt-5, DeepSeek-R1 behind a hosted API): the token budget
  // goes out as max_completion_tokens, which such APIs require, instead of max_tokens. A request
  // that sets reasoning_effort is sent the same way whatever this says.
  bool reasoning_model = false;
};

struct ChatRequest {
  std::string model;
  std::vector<ChatMessage> messages;
  std::optional<double> temperature;
  std::optional<int64_t> max_tokens;  // sent as max_completion_tokens to reasoning models
  std::optional<std::string> reasoning_effort;  // "low" | "medium" | "high"
  std::vector<ToolSpec> tools;
  // Ask for JSON matching this schema (response_format json_schema) where the server supports it.
  std::optional<nlohmann::json> response_schema;
  bool stream = true;
  std::optional<int64_t> seed;
  // Names this request's transcript files (NN-<label>.*); not sent. Empty: the client's role.
  std::string label;
};

enum class FinishReason : uint8_t { stop, length, tool_calls, content_filter, unknown };
inline constexpr std::array<std::string_view, 5> kFinishReasonNames = {
    "stop", "length", "tool_calls", "content_filter", "unknown"};
constexpr const auto& enum_names(FinishReason) { return kFinishReasonNames; }
static_assert(names_every_enumerator(FinishReason::unknown));

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t reasoning_tokens = 0;  // part of completion_tokens, where the server reports it
  // The server reported no usage (a stream without a usage chunk, as llama-cpp-python's server
  // sends): completion_tokens counts the stream's text events instead (one token each on llama.cpp
  // servers, an estimate elsewhere) and prompt_tokens is unknown (0).
  bool estimated = false;
  bool operator==(const Usage&) const = default;
};

struct ChatReply {
  std::string content;    // the answer (a reasoning model's answer may arrive in `reasoning`)
  std::string reasoning;  // "reasoning" / "reasoning_content" of reasoning models
  std::vector<ToolCall> tool_calls;
  FinishReason finish = FinishReason::unknown;
  Usage usage;
  std::string model;  // as the server named it
  double seconds = 0;  // wall time of the exchange, retries included
  int attempts = 1;    // HTTP requests it took
  // The server refused response_format (HTTP 400 naming it) and the reply came from a resend
  // without it: the JSON schema was not enforced, so the caller must validate the answer itself.
  bool response_format_dropped = false;
};

// Sends one chat completion. An Error for what no retry fixed (refused connection, 4xx, a stall
// past the timeout on the last try), with ErrorKind::machine for transport failures; a reply cut
// by `length` is a reply, not an error (the caller continues or retries with a larger budget).
class ChatClient {
 public:
  virtual ~ChatClient() = default;
  virtual Result<ChatReply> complete(const ChatRequest& request) = 0;
};

}  // namespace stitch::llm
