#include "llm/chat_wire.h"

#include "util/json_fields.h"

namespace stitch::llm {

using nlohmann::json;

namespace {

json message_to_wire(const ChatMessage& message) {
  json out = {{"role", enum_name(message.role)}};
  // An assistant turn that only called tools has no text: the API spells that as null.
  if (message.content.empty() && !message.tool_calls.empty())
    out["content"] = nullptr;
  else
    out["content"] = message.content;
  if (!message.tool_calls.empty()) {
    out["tool_calls"] = json_array(message.tool_calls, [](const ToolCall& call) {
      return json{{"id", call.id},
                  {"type", "function"},
                  {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
    });
  }
  if (message.role == Role::tool) out["tool_call_id"] = message.tool_call_id;
  return out;
}

// Either field name: vLLM and DeepSeek say reasoning_content, OpenRouter and newer vLLM reasoning.
std::string reasoning_of(const json& object) {
  std::string text = string_or(object, "reasoning_content");
  return text.empty() ? string_or(object, "reasoning") : text;
}

ToolCall tool_call_from_wire(const json& call) {
  const json function = call.value("function", json::object());
  return ToolCall{string_or(call, "id"), string_or(function, "name"),
                  string_or(function, "arguments")};
}

// The server's own error object ({"error": {"message": ...}} or {"error": "..."}).
std::optional<std::string> wire_error(const json& body) {
  if (!body.is_object() || !body.contains("error") || body["error"].is_null()) return std::nullopt;
  const json& error = body["error"];
  if (error.is_string()) return error.get<std::string>();
  std::string message = string_or(error, "message");
  return message.empty() ? error.dump() : message;
}

}  // namespace

bool sends_max_completion_tokens(const Endpoint& endpoint, const ChatRequest& request) {
  return endpoint.reasoning_model || request.reasoning_effort.has_value();
}

json request_to_wire(const ChatRequest& request, const WireOptions& options) {
  json body = {{"model", request.model},
               {"messages", json_array(request.messages, message_to_wire)}};
  if (request.temperature) body["temperature"] = *request.temperature;
  if (request.max_tokens)
    body[options.max_completion_tokens ? "max_completion_tokens" : "max_tokens"] =
        *request.max_tokens;
  if (request.reasoning_effort) body["reasoning_effort"] = *request.reasoning_effort;
  if (request.seed) body["seed"] = *request.seed;
  if (!request.tools.empty()) {
    body["tools"] = json_array(request.tools, [](const ToolSpec& tool) {
      return json{{"type", "function"},
                  {"function",
                   {{"name", tool.name},
                    {"description", tool.description},
                    {"parameters", tool.parameters}}}};
    });
    body["tool_choice"] = "auto";
  }
  if (request.response_schema && options.response_format) {
    body["response_format"] = {
        {"type", "json_schema"},
        {"json_schema", {{"name", "answer"}, {"schema", *request.response_schema}}}};
  }
  body["stream"] = request.stream;
  if (request.stream) body["stream_options"] = {{"include_usage", true}};
  return body;
}

FinishReason finish_reason_from_wire(std::string_view text) {
  if (text == "function_call") return FinishReason::tool_calls;  // the pre-tools spelling
  return enum_from_name<FinishReason>(text).value_or(FinishReason::unknown);
}

Usage usage_from_wire(const json& usage) {
  Usage out;
  if (!usage.is_object()) return out;
  out.prompt_tokens = static_cast<int64_t>(number_or(usage, "prompt_tokens", 0));
  out.completion_tokens = static_cast<int64_t>(number_or(usage, "completion_tokens", 0));
  out.reasoning_tokens = static_cast<int64_t>(
      number_or(usage.value("completion_tokens_details", json::object()), "reasoning_tokens", 0));
  return out;
}

void take_answer_from_reasoning(ChatReply& reply) {
  if (reply.content.empty() && reply.tool_calls.empty()) reply.content = reply.reasoning;
}

Result<ChatReply> reply_from_wire(const json& body) {
  if (auto error = wire_error(body)) return make_error("the server answered an error: {}", *error);
  if (!body.is_object() || !body.contains("choices") || !body["choices"].is_array() ||
      body["choices"].empty())
    return make_error("the response is no chat completion (no choices)");
  const json& choice = body["choices"][0];
  const json message = choice.value("message", json::object());
  ChatReply reply;
  reply.content = string_or(message, "content");
  reply.reasoning = reasoning_of(message);
  if (message.contains("tool_calls") && message["tool_calls"].is_array())
    for (const json& call : message["tool_calls"])
      reply.tool_calls.push_back(tool_call_from_wire(call));
  reply.finish = finish_reason_from_wire(string_or(choice, "finish_reason"));
  reply.usage = usage_from_wire(body.value("usage", json()));
  reply.model = string_or(body, "model");
  take_answer_from_reasoning(reply);
  return reply;
}

// ---- streaming ----------------------------------------------------------------------------------

Status StreamAssembler::apply(std::string_view data) {
  if (data == "[DONE]") {
    done_ = true;
    return {};
  }
  json chunk = json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (chunk.is_discarded()) return make_error("a stream event is not JSON: {:.200}", data);
  if (auto error = wire_error(chunk)) return make_error("the server streamed an error: {}", *error);
  if (std::string model = string_or(chunk, "model"); !model.empty()) reply_.model = model;
  if (chunk.contains("usage") && chunk["usage"].is_object()) {
    reply_.usage = usage_from_wire(chunk["usage"]);
    usage_seen_ = true;
  }
  if (!chunk.contains("choices") || !chunk["choices"].is_array()) return {};
  for (const json& choice : chunk["choices"]) {
    if (choice.value("index", 0) != 0) continue;  // one sample per request (n = 1)
    const json delta = choice.value("delta", json::object());
    const std::string content = string_or(delta, "content");
    const std::string reasoning = reasoning_of(delta);
    reply_.content += content;
    reply_.reasoning += reasoning;
    if (!content.empty() || !reasoning.empty() || delta.contains("tool_calls")) ++text_events_;
    if (delta.contains("tool_calls") && delta["tool_calls"].is_array()) {
      for (const json& piece : delta["tool_calls"]) {
        ToolCall& call = tool_calls_[static_cast<int64_t>(number_or(piece, "index", 0))];
        ToolCall part = tool_call_from_wire(piece);
        if (!part.id.empty()) call.id = part.id;
        call.name += part.name;
        call.arguments += part.arguments;
      }
    }
    if (std::string finish = string_or(choice, "finish_reason"); !finish.empty()) {
      reply_.finish = finish_reason_from_wire(finish);
      finish_seen_ = true;
    }
  }
  return {};
}

ChatReply StreamAssembler::reply() const {
  ChatReply reply = reply_;
  if (!usage_seen_ && text_events_ > 0) {
    reply.usage.completion_tokens = text_events_;
    reply.usage.estimated = true;
  }
  for (const auto& [index, call] : tool_calls_)
    reply.tool_calls.push_back(call);
  take_answer_from_reasoning(reply);
  return reply;
}

// ---- transcripts --------------------------------------------------------------------------------

json usage_to_json(const Usage& usage) {
  json out = {{"prompt_tokens", usage.prompt_tokens},
              {"completion_tokens", usage.completion_tokens},
              {"reasoning_tokens", usage.reasoning_tokens}};
  if (usage.estimated) out["estimated"] = true;
  return out;
}

Usage usage_from_json(const json& json) {
  const bool estimated = json.is_object() && json.contains("estimated") &&
                         json["estimated"].is_boolean() && json["estimated"].get<bool>();
  return Usage{static_cast<int64_t>(number_or(json, "prompt_tokens", 0)),
               static_cast<int64_t>(number_or(json, "completion_tokens", 0)),
               static_cast<int64_t>(number_or(json, "reasoning_tokens", 0)), estimated};
}

json reply_to_json(const ChatReply& reply) {
  return {{"content", reply.content},
          {"reasoning", reply.reasoning},
          {"tool_calls",
           json_array(
               reply.tool_calls,
               [](const ToolCall& call) {
                 return json{{"id", call.id}, {"name", call.name}, {"arguments", call.arguments}};
               })},
          {"finish_reason", enum_name(reply.finish)},
          {"usage", usage_to_json(reply.usage)},
          {"model", reply.model},
          {"seconds", reply.seconds},
          {"attempts", reply.attempts},
          {"response_format_dropped", reply.response_format_dropped}};
}

Result<ChatReply> reply_from_json(const json& doc) {
  if (!doc.is_object()) return make_error(ErrorKind::bad_input, "a chat reply is not an object");
  ChatReply reply;
  STITCH_TRY(read_field(doc, "content", reply.content));
  STITCH_TRY(read_field(doc, "reasoning", reply.reasoning));
  STITCH_ASSIGN_OR_RETURN(
      reply.tool_calls, read_array<ToolCall>(doc, "tool_calls", [](const json& call) {
        return Result<ToolCall>(
            ToolCall{string_or(call, "id"), string_or(call, "name"), string_or(call, "arguments")});
      }));
  STITCH_ASSIGN_OR_RETURN(reply.finish, read_enum<FinishReason>(doc, "finish_reason"));
  reply.usage = usage_from_json(doc.value("usage", json::object()));
  STITCH_TRY(read_field(doc, "model", reply.model));
  STITCH_TRY(read_field(doc, "seconds", reply.seconds));
  STITCH_TRY(read_field(doc, "attempts", reply.attempts));
  STITCH_TRY(read_field(doc, "response_format_dropped", reply.response_format_dropped));
  return reply;
}

}  // namespace stitch::llm
