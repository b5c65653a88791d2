// The LLM rubric judge (judge_llm.h): the prompt's parts from the evidence, and the strict reading
// of the reply.
#include "reward/judge_llm.h"

#include <algorithm>

#include <fmt/format.h>

#include "ir/cost.h"
#include "llm/json_reply.h"
#include "llm/prompt_template.h"
#include "reward/rubric.h"

namespace stitch::reward {
namespace {

using nlohmann::json;

std::string describe_reference(const AttemptEvidence& evidence) {
  if (!evidence.reference) return "(not available)";
  const ir::Graph& graph = *evidence.reference;
  ir::GraphCost total = ir::estimate_graph_cost(graph);
  std::string out;
  for (const ir::Node& node : graph.nodes) {
    if (ir::is_view(node.op)) continue;
    ir::NodeCost cost = ir::estimate_node_cost(graph, node);
    out += fmt::format("- {} ({}): {:.3g} FLOP ({:.0f}%), {:.3g} bytes ({:.0f}%)\n", node.id,
                       node.op_name, cost.flops,
                       total.flops > 0 ? 100 * cost.flops / total.flops : 0.0, cost.bytes,
                       total.bytes > 0 ? 100 * cost.bytes / total.bytes : 0.0);
  }
  return out.empty() ? "(no operations)" : out;
}

std::string describe_program(const AttemptEvidence& evidence, size_t max_chars) {
  std::string out;
  for (const SourceText& source : evidence.sources) {
    std::string text = source.text;
    size_t room = max_chars > out.size() ? max_chars - out.size() : 0;
    bool cut = text.size() > room;
    if (cut) text.resize(room);
    out += fmt::format("## {}\n\n```\n{}\n```\n{}\n", source.name, text,
                       cut ? "(cut here: the file goes on)" : "");
  }
  return out.empty() ? "(no program)" : out;
}

std::string describe_verification(const AttemptEvidence& evidence) {
  if (!evidence.verify) return "(never verified)";
  const VerifyReport& v = *evidence.verify;
  std::string out = fmt::format("{}\n", fmt::join(v.summary, "\n"));
  for (const FindingRecord& record : v.findings)
    out += fmt::format("finding {} {} ({}): {}\n", record.finding.fatal ? "FATAL" : "warning",
                       enum_name(record.finding.kind), record.origin, record.finding.detail);
  for (const Speedup& speedup : v.speedups)
    out += fmt::format("speedup over {}: {:.3g}x\n", speedup.mode, speedup.speedup);
  if (v.launches_per_forward)
    out += fmt::format("kernel launches per forward: {:g}\n", *v.launches_per_forward);
  return out;
}

std::string describe_followed(const AttemptEvidence& evidence) {
  if (evidence.followed) {
    const Feedback& feedback = evidence.followed->feedback;
    return fmt::format("Feedback on an earlier attempt (verdict {}): {} — {}\n",
                       feedback.outcome ? enum_name(*feedback.outcome) : enum_name(feedback.state),
                       enum_name(feedback.suggestion.rule), feedback.suggestion.text);
  }
  if (evidence.plan) {
    std::string out = "A plan, one subtask a line (id: kernel):\n";
    for (const plan::Subtask& subtask : evidence.plan->subtasks)
      out += fmt::format("- {}: {}\n", subtask.id, subtask.kernel);
    return out + fmt::format("host: CUDA graph capture {}\n",
                             evidence.plan->host.cuda_graph ? "yes" : "no");
  }
  return "(nothing: neither a plan nor feedback; score skill_compliance 3)";
}

// Whitespace runs squeezed to one space, so a quote that rewraps a line still matches.
std::string squeeze(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    bool is_space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (is_space && !out.empty()) space = true;
    if (is_space) continue;
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

Result<DimensionScore> read_dimension(const json& scores, Dimension dimension,
                                      std::string_view shown, std::vector<std::string>& notes) {
  std::string name(enum_name(dimension));
  if (!scores.contains(name) || !scores[name].is_object())
    return make_error(ErrorKind::work_failed, "scores.{} is missing or not an object", name);
  const json& one = scores[name];
  if (!one.contains("score") || !one["score"].is_number())
    return make_error(ErrorKind::work_failed, "scores.{}.score is missing or not a number", name);
  if (!one.contains("evidence") || !one["evidence"].is_array())
    return make_error(ErrorKind::work_failed, "scores.{}.evidence is missing or not a list", name);
  DimensionScore score{dimension, one["score"].get<double>(), {}};
  if (score.score < 1 || score.score > 5) {
    notes.push_back(fmt::format("{}: score {:g} clamped to [1, 5]", name, score.score));
    score.score = std::clamp(score.score, 1.0, 5.0);
  }
  std::string haystack = squeeze(shown);
  for (const json& quote : one["evidence"]) {
    if (!quote.is_string())
      return make_error(ErrorKind::work_failed, "scores.{}.evidence holds a non-string", name);
    std::string text = quote.get<std::string>();
    if (haystack.find(squeeze(text)) == std::string::npos)
      notes.push_back(fmt::format("{}: quote not found in what the judge was shown: \"{}\"", name,
                                  text.substr(0, 80)));
    score.evidence.push_back(std::move(text));
  }
  return score;
}

}  // namespace

Result<RubricScores> parse_judge_scores(const json& reply, std::string_view shown) {
  if (!reply.is_object() || !reply.contains("scores") || !reply["scores"].is_object())
    return make_error(ErrorKind::work_failed, "the answer has no \"scores\" object");
  RubricScores rubric;
  rubric.judge = JudgeKind::llm;
  for (size_t d = 0; d < kDimensionCount; ++d) {
    STITCH_ASSIGN_OR_RETURN(rubric.dimensions[d],
                            read_dimension(reply["scores"], Dimension(d), shown, rubric.notes));
  }
  return rubric;
}

Result<std::vector<llm::ChatMessage>> judge_messages(const AttemptEvidence& evidence,
                                                     const LlmJudgeOptions& options) {
  STITCH_ASSIGN_OR_RETURN(std::string_view rubric, rubric_text());
  STITCH_ASSIGN_OR_RETURN(std::string_view text, judge_prompt_template());
  llm::PromptValues values = {{"rubric", std::string(rubric)},
                              {"reference", describe_reference(evidence)},
                              {"program", describe_program(evidence, options.max_program_chars)},
                              {"verification", describe_verification(evidence)},
                              {"followed", describe_followed(evidence)}};
  STITCH_ASSIGN_OR_RETURN(llm::RenderedPrompt prompt, llm::render_template(text, values, {}));
  return llm::prompt_messages(prompt);
}

Result<RubricScores> LlmJudge::judge(const AttemptEvidence& evidence) {
  llm::ChatRequest request;
  request.model = options_.model;
  STITCH_ASSIGN_OR_RETURN(request.messages, judge_messages(evidence, options_));
  request.temperature = options_.temperature;
  request.max_tokens = options_.max_tokens;
  request.label = "reward_judge";
  std::string shown;
  for (const llm::ChatMessage& message : request.messages)
    shown += message.content + "\n";
  auto validate = [&](const json& value) -> Status {
    auto scores = parse_judge_scores(value, shown);
    if (!scores.ok()) return scores.error();
    return {};
  };
  STITCH_ASSIGN_OR_RETURN(llm::JsonExchange exchange, llm::ask_json(client_, request, validate));
  if (!exchange.value)
    return make_error(ErrorKind::work_failed, "LLM judge: {}", exchange.failure.message());
  STITCH_ASSIGN_OR_RETURN(RubricScores scores, parse_judge_scores(*exchange.value, shown));
  if (exchange.repaired) scores.notes.push_back("the judge's JSON needed repair");
  if (exchange.reasked) scores.notes.push_back("the judge was asked twice for usable JSON");
  return scores;
}

}  // namespace stitch::reward
