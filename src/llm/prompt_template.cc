// Prompt templates: placeholders, partials, the system/user split (prompt_template.h).
#include "llm/prompt_template.h"

#include <algorithm>
#include <cctype>

#include "llm/prompt_files.h"

namespace stitch::llm {
namespace {

constexpr std::string_view kUserMarker = "<!-- user -->\n";
constexpr std::string_view kPromptDir = "prompts/";
constexpr int kMaxPartialDepth = 4;  // a partial including itself fails instead of looping

int line_at(std::string_view text, size_t offset) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + offset, '\n'));
}

bool is_name_char(char c) {
  return std::islower(static_cast<unsigned char>(c)) ||
         std::isdigit(static_cast<unsigned char>(c)) || c == '_';
}

// The template without its leading description comment (and the newline after it).
std::string_view drop_leading_comment(std::string_view text) {
  if (!text.starts_with("<!--")) return text;
  const size_t end = text.find("-->");
  if (end == std::string_view::npos) return text;
  std::string_view rest = text.substr(end + 3);
  if (rest.starts_with('\n')) rest.remove_prefix(1);
  return rest;
}

std::string_view trim_trailing_newlines(std::string_view text) {
  while (text.ends_with('\n'))
    text.remove_suffix(1);
  return text;
}

Result<std::string> fill(std::string_view text, const PromptValues& values,
                         const PartialLookup& partials, std::vector<std::string>& used, int depth) {
  std::string out;
  size_t at = 0;
  while (true) {
    const size_t open = text.find("{{", at);
    out.append(
        text.substr(at, open == std::string_view::npos ? std::string_view::npos : open - at));
    if (open == std::string_view::npos) return out;
    const size_t close = text.find("}}", open);
    std::string_view inner = close == std::string_view::npos
                                 ? std::string_view{}
                                 : text.substr(open + 2, close - open - 2);
    const bool partial = inner.starts_with('>');
    if (partial) inner.remove_prefix(1);
    while (inner.starts_with(' '))
      inner.remove_prefix(1);
    while (inner.ends_with(' '))
      inner.remove_suffix(1);
    if (close == std::string_view::npos || inner.empty() ||
        !std::all_of(inner.begin(), inner.end(), is_name_char))
      return make_error("line {}: malformed placeholder (expected {{{{name}}}} or {{{{> name}}}})",
                        line_at(text, open));
    const std::string name(inner);
    if (partial) {
      std::optional<std::string_view> included = partials ? partials(name) : std::nullopt;
      if (!included) return make_error("line {}: unknown partial '{}'", line_at(text, open), name);
      if (depth >= kMaxPartialDepth)
        return make_error("line {}: partials nested deeper than {} (a cycle?) at '{}'",
                          line_at(text, open), kMaxPartialDepth, name);
      auto expanded = fill(trim_trailing_newlines(drop_leading_comment(*included)), values,
                           partials, used, depth + 1);
      if (!expanded.ok()) return expanded.error().with_context("in partial " + name);
      out += *expanded;
    } else {
      auto value = values.find(name);
      if (value == values.end())
        return make_error("line {}: no value for placeholder {{{{{}}}}}", line_at(text, open),
                          name);
      out += value->second;
      used.push_back(name);
    }
    at = close + 2;
  }
}

std::optional<std::string_view> embedded_prompt(std::string_view name) {
  return embedded_file(std::string(kPromptDir) + std::string(name) + ".md");
}

}  // namespace

Result<std::string> fill_placeholders(std::string_view text, const PromptValues& values,
                                      const PartialLookup& partials,
                                      std::vector<std::string>& used) {
  return fill(text, values, partials, used, 0);
}

Result<RenderedPrompt> render_template(std::string_view text, const PromptValues& values,
                                       const PartialLookup& partials) {
  text = drop_leading_comment(text);
  std::string_view system, user = text;
  if (const size_t marker = text.find(kUserMarker); marker != std::string_view::npos) {
    system = trim_trailing_newlines(text.substr(0, marker));
    user = text.substr(marker + kUserMarker.size());
  }
  std::vector<std::string> used;
  RenderedPrompt prompt;
  auto system_text = fill(system, values, partials, used, 0);
  if (!system_text.ok()) return system_text.error().with_context("system part");
  auto user_text = fill(user, values, partials, used, 0);
  if (!user_text.ok()) return user_text.error().with_context("user part");
  for (const auto& [name, value] : values)
    if (std::find(used.begin(), used.end(), name) == used.end())
      return make_error("value '{}' is given but no placeholder uses it", name);
  prompt.system = std::move(*system_text);
  prompt.user = std::move(*user_text);
  return prompt;
}

Result<RenderedPrompt> render_prompt(std::string_view name, const PromptValues& values) {
  std::optional<std::string_view> text = embedded_prompt(name);
  if (!text) return make_error("no prompt template named '{}'", name);
  auto rendered = render_template(*text, values, embedded_prompt);
  if (!rendered.ok()) return rendered.error().with_context(fmt::format("prompt {}", name));
  return rendered;
}

std::vector<std::string> prompt_names() {
  std::vector<std::string> names;
  for (const EmbeddedFile& file : embedded_files())
    if (file.name.starts_with(kPromptDir) && file.name.ends_with(".md"))
      names.emplace_back(
          file.name.substr(kPromptDir.size(), file.name.size() - kPromptDir.size() - 3));
  return names;
}

std::vector<ChatMessage> prompt_messages(const RenderedPrompt& prompt) {
  std::vector<ChatMessage> messages;
  if (!prompt.system.empty()) messages.push_back({Role::system, prompt.system, {}, {}});
  messages.push_back({Role::user, prompt.user, {}, {}});
  return messages;
}

}  // namespace stitch::llm
