// `stitchcuda reward ATTEMPT_DIR [--json] [--judge builtin|llm] [--baseline MODE]`: the rubric
// reward of one attempt (docs/rubric.md) — options and printing only; the work is src/reward's.
// The LLM judge uses the Verifier role's endpoint and model (stitchcuda.toml, or the flags here).
#include <fmt/format.h>

#include "cli/commands.h"
#include "llm/config.h"
#include "llm/http_chat_client.h"
#include "reward/judge_builtin.h"
#include "reward/judge_llm.h"
#include "util/process.h"

namespace stitch::cli {
namespace {

struct RewardCommandOptions {
  std::string attempt_dir;
  bool json = false;
  bool sass = true;
  std::string judge = "builtin";
  reward::RewardOptions reward;
  reward::EvidenceSources sources;
  std::string graph, plan, followed;
  llm::LlmFlags llm;
};

void print_breakdown(const reward::RewardBreakdown& b) {
  fmt::print("reward {:.3f} / {:g}{}  (verdict {}, judge {})\n", b.reward,
             reward::RewardOptions{}.max_reward, b.hacked ? "  HACKED: forced to 0" : "", b.verdict,
             enum_name(b.rubric.judge));
  fmt::print("  rule reward {:.3f}   speedup over {}: {}\n", b.rule_reward, b.baseline,
             b.speedup ? fmt::format("{:.3f}x", *b.speedup) : std::string("-"));
  fmt::print("  shaping     {:+.3f}{}\n", b.shaping, b.clipped ? "   (total clipped)" : "");
  for (const reward::DimensionScore& score : b.rubric.dimensions) {
    fmt::print("  {:<18} {:.1f}\n", enum_name(score.dimension), score.score);
    for (const std::string& line : score.evidence)
      fmt::print("      {}\n", line);
  }
  for (const std::string& note : b.rubric.notes)
    fmt::print("  note: {}\n", note);
  for (const std::string& note : b.notes)
    fmt::print("  note: {}\n", note);
}

Result<reward::RewardBreakdown> score(RewardCommandOptions& o) {
  STITCH_TRY(reward::check_baseline_name(o.reward.baseline));
  o.sources = {o.graph, o.plan, o.followed};
  SystemProcessRunner runner;
  reward::CuobjdumpInspector cuobjdump(runner);
  STITCH_ASSIGN_OR_RETURN(
      reward::AttemptEvidence evidence,
      reward::read_attempt_evidence(o.attempt_dir, o.sources, o.sass ? &cuobjdump : nullptr));
  if (o.judge == "builtin") return reward::score_attempt(evidence, o.reward);
  o.llm.verifier = "llm";
  STITCH_ASSIGN_OR_RETURN(llm::LlmConfig config,
                          llm::resolve_llm_config(o.llm, std::filesystem::current_path()));
  const llm::RoleConfig& role = config.role(llm::LoopRole::verifier);
  llm::HttpChatClient client(role.endpoint);
  reward::LlmJudgeOptions judge_options;
  judge_options.model = role.model;
  if (role.temperature) judge_options.temperature = role.temperature;
  if (role.max_tokens) judge_options.max_tokens = role.max_tokens;
  reward::LlmJudge judge(client, judge_options);
  return reward::score_attempt(evidence, o.reward, judge);
}

}  // namespace

CommandAction setup_reward(CLI::App& app) {
  auto o = std::make_shared<RewardCommandOptions>();
  app.add_option("attempt_dir", o->attempt_dir, "An attempt directory (verify.json, the program)")
      ->required();
  app.add_flag("--json", o->json, "Print the breakdown as JSON (format stitchcuda.reward)");
  app.add_option("--judge", o->judge, "Who scores the rubric: builtin (default) or llm")
      ->check(CLI::IsMember({"builtin", "llm"}));
  app.add_option("--baseline", o->reward.baseline,
                 "The speedup's baseline: eager (default), compile, reduce-overhead");
  app.add_option("--graph", o->graph, "The reference's graph.json (default: the run's)");
  app.add_option("--plan", o->plan, "The plan the attempt implemented (default: the run's)");
  app.add_option("--followed", o->followed,
                 "The attempt whose feedback.json this one followed (default: found in the run)");
  app.add_flag("!--no-sass", o->sass, "Do not disassemble the built library with cuobjdump");
  app.add_option("--config", o->llm.config_file, "LLM settings (default ./stitchcuda.toml)");
  app.add_option("--api-base", o->llm.api_base, "The LLM judge's endpoint");
  app.add_option("--api-key-env", o->llm.api_key_env, "Environment variable holding the API key");
  app.add_option("--model", o->llm.verifier_model, "The LLM judge's model");
  return [o]() -> Result<CommandEnd> {
    STITCH_ASSIGN_OR_RETURN(reward::RewardBreakdown breakdown, score(*o));
    if (o->json)
      fmt::print("{}\n", reward::breakdown_to_json(breakdown).dump(2));
    else
      print_breakdown(breakdown);
    return CommandEnd::succeeded;
  };
}

}  // namespace stitch::cli
