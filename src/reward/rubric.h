// The rubric's text, one source of truth: the part of docs/rubric.md between its
// `<!-- rubric:begin -->` and `<!-- rubric:end -->` markers, embedded at build time. The LLM judge
// puts it into its prompt; the docs show the same words.
#pragma once

#include <string_view>

#include "util/result.h"

namespace stitch::reward {

// The rubric section of docs/rubric.md (between the markers, trimmed of blank edges).
Result<std::string_view> rubric_text();

// The judge's prompt template (src/reward/prompts/judge.md).
Result<std::string_view> judge_prompt_template();

// The section of a document between the rubric markers; an Error when a marker is missing.
Result<std::string_view> rubric_section(std::string_view document);

}  // namespace stitch::reward
