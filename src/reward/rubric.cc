// The rubric text out of the embedded docs/rubric.md (rubric.h).
#include "reward/rubric.h"

#include "reward/rubric_files.h"

namespace stitch::reward {
namespace {

constexpr std::string_view kBegin = "<!-- rubric:begin -->";
constexpr std::string_view kEnd = "<!-- rubric:end -->";

Result<std::string_view> embedded(std::string_view name) {
  for (const EmbeddedFile& file : embedded_files())
    if (file.name == name) return file.contents;
  return make_error("the embedded file {} is missing from this build", name);
}

std::string_view trim_newlines(std::string_view text) {
  while (!text.empty() && (text.front() == '\n' || text.front() == ' '))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.remove_suffix(1);
  return text;
}

}  // namespace

Result<std::string_view> rubric_section(std::string_view document) {
  size_t begin = document.find(kBegin);
  size_t end = document.find(kEnd);
  if (begin == std::string_view::npos || end == std::string_view::npos || end < begin)
    return make_error("docs/rubric.md: the rubric markers are missing or out of order");
  begin += kBegin.size();
  return trim_newlines(document.substr(begin, end - begin));
}

Result<std::string_view> rubric_text() {
  STITCH_ASSIGN_OR_RETURN(std::string_view document, embedded("rubric.md"));
  return rubric_section(document);
}

Result<std::string_view> judge_prompt_template() {
  return embedded("judge.md");
}

}  // namespace stitch::reward
