// The built-in Planner and Coder (builtin_roles.h).
#include "agents/builtin_roles.h"

#include <algorithm>
#include <set>
#include <variant>

#include <fmt/format.h>

#include "agents/program_variant.h"
#include "agents/workflow.h"
#include "codegen/program_emitter.h"
#include "ir/ir.h"
#include "plan/plan_json.h"
#include "plan/planner.h"
#include "util/fs.h"
#include "verify/feedback.h"
#include "verify/verifier.h"

namespace stitch::agents {
namespace {

using nlohmann::json;

plan::PlanOptions options_for(const plan::PlanOptions& base, const json& rung) {
  plan::PlanOptions options = base;
  options.allow_tf32x3 = rung.value("allow_tf32x3", base.allow_tf32x3);
  options.reassociate_gemm_sums = rung.value("reassociate_gemm_sums", base.reassociate_gemm_sums);
  options.lower_gemv = rung.value("lower_gemv", base.lower_gemv);
  return options;
}

std::string plan_summary(const plan::Plan& plan, const json& rung) {
  std::map<std::string, int> kernels;
  for (const auto& subtask : plan.subtasks)
    kernels[subtask.kernel]++;
  std::string list;
  for (const auto& [kernel, count] : kernels)
    list += fmt::format("{}{} {}", list.empty() ? "" : ", ", count, kernel);
  return fmt::format("{} subtasks ({}), options: {}", plan.subtasks.size(), list,
                     rung.value("rung", "defaults"));
}

}  // namespace

std::vector<json> BuiltinPlanner::option_ladder() {
  return {
      {{"rung", "defaults"}},
      {{"rung", "strict FP32 GEMMs"}, {"allow_tf32x3", false}},
      {{"rung", "no GEMM reassociation"},
       {"allow_tf32x3", false},
       {"reassociate_gemm_sums", false}},
      {{"rung", "no GEMV lowering"},
       {"allow_tf32x3", false},
       {"reassociate_gemm_sums", false},
       {"lower_gemv", false}},
  };
}

Result<PlanOutcome> BuiltinPlanner::plan(const PlanRequest& request) {
  STITCH_ASSIGN_OR_RETURN(ir::Graph graph,
                          ir::load_graph((request.run_dir / "graph.json").string()));
  PlanOutcome outcome;
  std::string last_error;
  for (const json& rung : option_ladder()) {
    if (std::find(request.tried_options.begin(), request.tried_options.end(), rung) !=
        request.tried_options.end())
      continue;
    auto made = plan::make_plan(graph, options_for(base_, rung));
    if (!made.ok()) {
      // The first plan refused: the graph is outside the covered families. A later rung that
      // fails is skipped for the next one.
      if (request.tried_options.empty()) {
        outcome.refusal.reason = made.error().message;
        return outcome;
      }
      last_error = made.error().message;
      continue;
    }
    STITCH_TRY(plan::save_plan(*made, request.plan_file.string()));
    PlanDraft draft;
    for (const auto& subtask : made->subtasks)
      draft.subtask_ids.push_back(subtask.id);
    draft.options = rung;
    draft.summary = plan_summary(*made, rung);
    outcome.draft = std::move(draft);
    return outcome;
  }
  outcome.exhausted = true;
  outcome.refusal.reason = last_error;
  return outcome;
}

Result<std::vector<json>> BuiltinCoder::retry_variants(const fs::path& plan_file,
                                                       const std::string& suggestion_rule) {
  STITCH_ASSIGN_OR_RETURN(plan::Plan plan, plan::load_plan(plan_file.string()));
  json strict = json::object();
  for (const auto& subtask : plan.subtasks) {
    auto found = subtask.tunables.find("split_tf32x3");
    if (found != subtask.tunables.end() && found->second != 0)
      strict["subtasks"][subtask.id] = {{"split_tf32x3", 0}};
  }
  const json no_graph = {{"cuda_graph", false}};
  std::vector<json> precision_first, launch_first;
  if (!strict.empty()) precision_first.push_back(strict);
  precision_first.push_back(no_graph);
  if (!strict.empty()) precision_first.push_back(merge_variant(strict, no_graph));
  launch_first.push_back(no_graph);
  if (!strict.empty()) {
    launch_first.push_back(strict);
    launch_first.push_back(merge_variant(strict, no_graph));
  }
  static const std::set<std::string> launch_rules = {"fix_hang", "fix_memory_access",
                                                     "fix_runtime_error"};
  return launch_rules.count(suggestion_rule) ? launch_first : precision_first;
}

Result<CodeOutcome> BuiltinCoder::write(const CodeRequest& request) {
  CodeOutcome outcome;
  json variant = request.variant;
  if (variant.empty() && !request.tried_variants.empty()) {
    std::string rule;
    if (request.feedback)
      if (auto feedback = read_feedback(*request.feedback); feedback.ok())
        rule = enum_name(feedback->suggestion.rule);
    STITCH_ASSIGN_OR_RETURN(std::vector<json> options, retry_variants(request.plan_file, rule));
    bool found = false;
    for (const auto& option : options)
      if (std::find(request.tried_variants.begin(), request.tried_variants.end(), option) ==
          request.tried_variants.end()) {
        variant = option;
        found = true;
        break;
      }
    if (!found) {
      outcome.why_not = fmt::format("the built-in Coder has tried every variant of plan v{}",
                                    request.plan_version);
      return outcome;
    }
  } else if (std::find(request.tried_variants.begin(), request.tried_variants.end(), variant) !=
             request.tried_variants.end()) {
    outcome.why_not = fmt::format("variant {} was already tried", describe_variant(variant));
    return outcome;
  }
  STITCH_ASSIGN_OR_RETURN(plan::Plan plan, plan::load_plan(request.plan_file.string()));
  STITCH_ASSIGN_OR_RETURN(AppliedVariant applied, apply_variant(plan, variant));
  auto program = codegen::emit_program(applied.plan, applied.emit);
  if (!program.ok()) {  // the emitter cannot express this plan: not a failure of the machinery
    outcome.why_not = "the emitter refuses the plan: " + program.error().message;
    return outcome;
  }
  const fs::path source = request.out_dir / "program.cu";
  STITCH_TRY(make_dirs(request.out_dir));
  STITCH_TRY(write_file_atomic(source, program->source));
  CodeDraft draft;
  draft.sources = {source};
  draft.libraries = program_link_libraries(program->libraries, draft.sources, include_dirs_);
  draft.variant = variant;
  draft.label = "built-in: " + describe_variant(variant);
  outcome.draft = std::move(draft);
  return outcome;
}

std::string describe_variant(const json& variant) {
  if (!variant.is_object() || variant.empty()) return "plan defaults";
  std::string text;
  auto add = [&](const std::string& part) { text += (text.empty() ? "" : ", ") + part; };
  for (const auto& [key, value] : variant.items()) {
    if (key != "subtasks") {
      add(fmt::format("{}={}", key, value.dump()));
      continue;
    }
    for (const auto& [id, overrides] : value.items())
      for (const auto& [tunable, setting] : overrides.items())
        add(fmt::format("{} {}={}", id.substr(0, id.find('_')), tunable, setting.dump()));
  }
  return text;
}

}  // namespace stitch::agents
