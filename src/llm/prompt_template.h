// Prompt templates: Markdown files (src/llm/prompts/*.md, embedded by prompt_files.h) with
// `{{name}}` placeholders and `{{> partial}}` includes of another template. The text before a line
// `<!-- user -->` is the system message, the rest the user message; a leading `<!-- ... -->`
// comment describes the file and is dropped. Rendering fails on a placeholder without a value and
// on a value no placeholder uses, so a template and its context builder cannot drift apart
// silently. Values are inserted verbatim (never scanned for placeholders themselves).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llm/chat.h"
#include "util/result.h"

namespace stitch::llm {

using PromptValues = std::map<std::string, std::string, std::less<>>;
// The text of the template a `{{> name}}` names; nullopt when there is none.
using PartialLookup = std::function<std::optional<std::string_view>(std::string_view name)>;

// `text` with its placeholders filled and partials expanded; `used` collects the value names used
// (the caller checks for unused ones across several texts). An Error names the placeholder and
// its line.
Result<std::string> fill_placeholders(std::string_view text, const PromptValues& values,
                                      const PartialLookup& partials,
                                      std::vector<std::string>& used);

struct RenderedPrompt {
  std::string system;  // empty when the template has no system part
  std::string user;
  bool operator==(const RenderedPrompt&) const = default;
};

// Renders a template's text (the comment dropped, split at the user marker); an Error for a
// missing or unused value, an unknown partial or a malformed placeholder.
Result<RenderedPrompt> render_template(std::string_view text, const PromptValues& values,
                                       const PartialLookup& partials);

// The embedded prompt `name` ("coder_generate") rendered, partials taken from the embedded ones.
Result<RenderedPrompt> render_prompt(std::string_view name, const PromptValues& values);

// The names of the embedded prompts ("planner", "coder_generate", ...), partials included.
std::vector<std::string> prompt_names();

// The chat messages of a rendered prompt: the system message (when there is one), then the user's.
std::vector<ChatMessage> prompt_messages(const RenderedPrompt& prompt);

}  // namespace stitch::llm
