// JSON answers from a model (the Planner's plan, the Verifier's analysis): found wherever the
// reply puts them (a ```json fence, any fence, or bare), repaired when slightly malformed
// (comments, trailing commas, single quotes, Python literals, a reply truncated before its closing
// brackets), and, when that still fails, asked for once more with the parse error in the message. A
// step whose model never produces readable JSON ends as no_usable_output (not_json).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/chat.h"
#include "llm/extract.h"
#include "util/result.h"

namespace stitch::llm {

// The text of the JSON value in `reply`: a ```json block, else the first block starting with { or
// [, else from the first { or [ to its matching close (or the end, when it never closes).
std::optional<std::string> find_json_text(std::string_view reply);

// `text` with the usual slips of a model mended: // and /* */ and # comments, trailing commas,
// 'single-quoted' strings, True/False/None, an unterminated string and unclosed brackets at the
// end. Valid JSON comes back unchanged.
std::string repair_json_text(std::string_view text);

struct JsonReading {
  nlohmann::json value;
  bool repaired = false;  // strict parsing failed; the repaired text parsed
};

// The JSON value of `reply`; an Error whose message is the parse error (of the repaired text) or
// says that no JSON was found.
Result<JsonReading> read_json_reply(std::string_view reply);

// The message that re-asks for JSON after `problem` (a parse error or a schema mismatch).
ChatMessage json_reask_message(const std::string& problem);

// A typed reader's verdict on a parsed value: an Error says what does not match (it goes back to
// the model on the re-ask).
using JsonValidator = std::function<Status(const nlohmann::json&)>;

struct JsonExchange {
  std::optional<nlohmann::json> value;  // set: a usable answer
  NoUsableOutput failure;               // unset value: why (reason not_json or empty_reply)
  std::vector<ChatReply> replies;       // every reply, in order (1 or 2)
  bool repaired = false;
  bool reasked = false;
  Usage usage;  // summed over the replies
};

// Sends `request`, reads JSON from the reply (`validate` judging the value), and on failure asks
// once more with the problem. An Error only when the client fails (transport, refused request).
Result<JsonExchange> ask_json(ChatClient& client, ChatRequest request,
                              const JsonValidator& validate = {});

}  // namespace stitch::llm
