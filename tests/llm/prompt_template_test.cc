// Prompt templates (src/llm/prompt_template.h): placeholders, partials, the system/user split, and
// the failures that keep a template and its context builder in step.
#include "llm/prompt_template.h"

#include <gtest/gtest.h>

namespace stitch::llm {
namespace {

std::optional<std::string_view> test_partials(std::string_view name) {
  if (name == "rules") return "<!-- about the rules -->\nbe {{manner}}\n\n";
  if (name == "loop") return "{{> loop}}";
  return std::nullopt;
}

TEST(PromptTemplate, FillsPlaceholdersAndSplitsSystemFromUser) {
  const std::string_view text =
      "<!-- what this file is -->\nsystem: {{> rules}}\n<!-- user -->\nTask {{task}}, {{ task }} "
      "again; {{code}}\n";
  auto prompt =
      render_template(text, {{"task", "T"}, {"manner", "brief"}, {"code", "{{x}}"}}, test_partials);
  ASSERT_TRUE(prompt.ok()) << prompt.error().message;
  EXPECT_EQ(prompt->system, "system: be brief");
  EXPECT_EQ(prompt->user, "Task T, T again; {{x}}\n");  // values are not rescanned
  const std::vector<ChatMessage> messages = prompt_messages(*prompt);
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0].role, Role::system);
  EXPECT_EQ(messages[1].content, prompt->user);
}

TEST(PromptTemplate, NoMarkerMeansAllUser) {
  auto prompt = render_template("just {{a}}", {{"a", "1"}}, {});
  ASSERT_TRUE(prompt.ok());
  EXPECT_EQ(prompt->system, "");
  EXPECT_EQ(prompt_messages(*prompt).size(), 1u);
}

struct BadRender {
  const char* name;
  const char* text;
  PromptValues values;
  const char* message;
};
void PrintTo(const BadRender& bad, std::ostream* os) {
  *os << bad.name;
}

class PromptTemplateRejects : public ::testing::TestWithParam<BadRender> {};

TEST_P(PromptTemplateRejects, NamingTheProblem) {
  auto prompt = render_template(GetParam().text, GetParam().values, test_partials);
  ASSERT_FALSE(prompt.ok());
  EXPECT_NE(prompt.error().message.find(GetParam().message), std::string::npos)
      << prompt.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Table, PromptTemplateRejects,
    ::testing::Values(
        BadRender{
            "missing", "a\n{{task}}", {}, "user part: line 2: no value for placeholder {{task}}"},
        BadRender{
            "unused", "{{a}}", {{"a", "1"}, {"b", "2"}}, "value 'b' is given but no placeholder"},
        BadRender{"unclosed", "x {{a", {{"a", "1"}}, "line 1: malformed placeholder"},
        BadRender{"bad_name", "{{Task-1}}", {}, "malformed placeholder"},
        BadRender{"unknown_partial", "{{> nothing}}", {}, "unknown partial 'nothing'"},
        BadRender{"partial_cycle", "{{> loop}}", {}, "nested deeper"},
        BadRender{"missing_in_partial", "{{> rules}}", {}, "in partial rules: line 1: no value"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(PromptTemplate, EveryEmbeddedPromptIsThere) {
  const std::vector<std::string> names = prompt_names();
  for (const char* name : {"planner", "replan", "coder_generate", "coder_revise",
                           "verifier_analysis", "coder_rules", "program_contract", "coder_subtask"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  auto missing = render_prompt("coder_generate", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("prompt coder_generate"), std::string::npos);
  EXPECT_FALSE(render_prompt("no_such_prompt", {}).ok());
}

}  // namespace
}  // namespace stitch::llm
