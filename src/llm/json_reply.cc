// JSON answers: found, repaired, re-asked once (json_reply.h).
#include "llm/json_reply.h"

#include <cctype>

#include <fmt/format.h>

namespace stitch::llm {
namespace {

using nlohmann::json;

bool starts_value(char c) {
  return c == '{' || c == '[';
}

// From `start` (a { or [) to its matching close, strings respected; to the end when it never
// closes (a truncated reply: repair closes it).
std::string_view balanced_value(std::string_view text, size_t start) {
  int depth = 0;
  char quote = 0;
  for (size_t i = start; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == '\\')
        ++i;
      else if (c == quote)
        quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    depth += starts_value(c) ? 1 : (c == '}' || c == ']') ? -1 : 0;
    if (depth == 0) return text.substr(start, i + 1 - start);
  }
  return text.substr(start);
}

std::optional<json> parse(std::string_view text, std::string& error) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {  // the library reports malformed text by exception
    error = e.what();
    return std::nullopt;
  }
}

// Appends a single-quoted string starting at text[i] as a JSON string; returns the index after it.
size_t copy_single_quoted(std::string_view text, size_t i, std::string& out) {
  out += '"';
  for (++i; i < text.size() && text[i] != '\''; ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '\'') {
      out += '\'';
      ++i;
    } else if (text[i] == '"') {
      out += "\\\"";
    } else {
      out += text[i];
      if (text[i] == '\\' && i + 1 < text.size()) out += text[++i];
    }
  }
  out += '"';
  return i + 1;
}

void drop_trailing_comma(std::string& out) {
  size_t end = out.size();
  while (end > 0 && std::isspace(static_cast<unsigned char>(out[end - 1])))
    --end;
  if (end > 0 && out[end - 1] == ',') out.erase(end - 1, 1);
}

// Closes what a truncated value left open: the string, a dangling key or comma, the brackets.
void close_truncated(std::string& out, bool in_string, const std::string& open) {
  if (in_string) out += '"';
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back())))
    out.pop_back();
  if (!out.empty() && out.back() == ':') out += "null";
  drop_trailing_comma(out);
  for (auto it = open.rbegin(); it != open.rend(); ++it)
    out += *it == '{' ? '}' : ']';
}

}  // namespace

std::optional<std::string> find_json_text(std::string_view reply) {
  const std::vector<CodeBlock> blocks = find_code_blocks(reply);
  for (const CodeBlock& block : blocks)
    if (block.language == "json") return block.code;
  for (const CodeBlock& block : blocks) {
    const size_t first = block.code.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && starts_value(block.code[first])) return block.code;
  }
  const size_t start = reply.find_first_of("{[");
  if (start == std::string_view::npos) return std::nullopt;
  return std::string(balanced_value(reply, start));
}

std::string repair_json_text(std::string_view text) {
  std::string out;
  std::string open;  // the brackets not yet closed
  bool in_string = false;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size())
        out += text[++i];
      else if (c == '"')
        in_string = false;
      ++i;
    } else if (c == '"') {
      in_string = true;
      out += c;
      ++i;
    } else if (c == '\'') {
      i = copy_single_quoted(text, i, out);
    } else if (text.compare(i, 2, "//") == 0 || c == '#') {
      i = text.find('\n', i);
      if (i == std::string_view::npos) i = text.size();
    } else if (text.compare(i, 2, "/*") == 0) {
      const size_t end = text.find("*/", i + 2);
      i = end == std::string_view::npos ? text.size() : end + 2;
    } else if (c == '}' || c == ']') {
      drop_trailing_comma(out);
      if (!open.empty()) open.pop_back();
      out += c;
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      size_t end = i;
      while (end < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_'))
        ++end;
      const std::string_view word = text.substr(i, end - i);
      out += word == "True" ? "true" : word == "False" ? "false" : word == "None" ? "null" : word;
      i = end;
    } else {
      if (starts_value(c)) open += c;
      out += c;
      ++i;
    }
  }
  close_truncated(out, in_string, open);
  return out;
}

Result<JsonReading> read_json_reply(std::string_view reply) {
  std::optional<std::string> text = find_json_text(reply);
  if (!text) return make_error("the reply holds no JSON object");
  std::string error;
  if (std::optional<json> value = parse(*text, error)) return JsonReading{std::move(*value), false};
  std::string repaired_error;
  if (std::optional<json> value = parse(repair_json_text(*text), repaired_error))
    return JsonReading{std::move(*value), true};
  return make_error("{}", error);
}

ChatMessage json_reask_message(const std::string& problem) {
  return {Role::user,
          fmt::format("Your last reply could not be used: {}\n\nReply again with only the JSON "
                      "object the task asks for, complete and valid: no prose, no code fences, no "
                      "comments, no trailing commas.",
                      problem),
          {},
          {}};
}

Result<JsonExchange> ask_json(ChatClient& client, ChatRequest request,
                              const JsonValidator& validate) {
  JsonExchange exchange;
  std::string problem;
  for (int round = 0; round < 2; ++round) {
    STITCH_ASSIGN_OR_RETURN(ChatReply reply, client.complete(request));
    exchange.usage.prompt_tokens += reply.usage.prompt_tokens;
    exchange.usage.completion_tokens += reply.usage.completion_tokens;
    exchange.usage.reasoning_tokens += reply.usage.reasoning_tokens;
    exchange.replies.push_back(reply);
    const std::string& text = reply.content.empty() ? reply.reasoning : reply.content;
    Result<JsonReading> reading = read_json_reply(text);
    Status valid = reading.ok() && validate ? validate(reading->value) : Status{};
    if (reading.ok() && valid.ok()) {
      exchange.value = std::move(reading->value);
      exchange.repaired = reading->repaired;
      return exchange;
    }
    problem = !reading.ok() ? reading.error().message : valid.error().message;
    if (round == 0) {
      request.messages.push_back({Role::assistant, reply.content, {}, {}});
      request.messages.push_back(json_reask_message(problem));
      exchange.reasked = true;
    }
  }
  const bool empty =
      exchange.replies.back().content.empty() && exchange.replies.back().reasoning.empty();
  exchange.failure = {empty ? UnusableReason::empty_reply : UnusableReason::not_json,
                      fmt::format("no usable JSON after one re-ask: {}", problem)};
  return exchange;
}

}  // namespace stitch::llm
