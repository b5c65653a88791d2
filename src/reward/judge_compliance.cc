// The built-in judge's skill compliance: did the attempt do what it was asked? Skill 2 (improve
// from feedback): did it change what the feedback's suggestion named, and did that thing improve?
// Skill 1 (implement a plan): does the program use the kernels and the host strategy the plan
// chose?
#include <algorithm>

#include <fmt/format.h>

#include "reward/judge_builtin.h"

namespace stitch::reward {
namespace {

int64_t total_spills(const VerifyReport& report) {
  int64_t spills = 0;
  for (const PtxasKernelReport& kernel : report.kernels)
    spills += kernel.spill_store_bytes + kernel.spill_load_bytes;
  return spills;
}

std::optional<double> median_ms(const VerifyReport& report) {
  const std::optional<TimingStats>& timing = report.reported_timing();
  return timing ? std::optional(timing->median_ms) : std::nullopt;
}

bool same_program(const std::vector<SourceText>& a, const std::vector<SourceText>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].text != b[i].text) return false;
  return true;
}

// Whether the thing the suggestion named got better: 5 it did, 2 it did not, 3 not measurable.
std::pair<double, std::string> judge_suggestion(SuggestionRule rule, const VerifyReport& now,
                                                const std::optional<VerifyReport>& before) {
  switch (rule) {
    case SuggestionRule::run_on_gpu:
    case SuggestionRule::infrastructure:
      return {3, "the feedback asked for nothing about the program"};
    case SuggestionRule::fix_compile_error:
      return now.built ? std::pair{5.0, std::string("it builds now")}
                       : std::pair{2.0, std::string("it still does not build")};
    case SuggestionRule::remove_hack: {
      if (!before) return {3, "the hacked attempt's verify.json is missing"};
      for (const FindingRecord& old : before->findings)
        for (const FindingRecord& record : now.findings)
          if (old.finding.fatal && record.finding.fatal && old.finding.kind == record.finding.kind)
            return {1, fmt::format("the {} finding is still there", enum_name(old.finding.kind))};
      return {5, "the hack the feedback named is gone"};
    }
    case SuggestionRule::reduce_spills:
      if (!before) return {3, "no earlier build to compare spills with"};
      return total_spills(now) < total_spills(*before)
                 ? std::pair{5.0, fmt::format("spills {} → {} bytes", total_spills(*before),
                                              total_spills(now))}
                 : std::pair{2.0, std::string("spills did not go down")};
    case SuggestionRule::fuse_launches:
      if (!before || !before->launches_per_forward || !now.launches_per_forward)
        return {3, "launches per forward not counted"};
      return *now.launches_per_forward < *before->launches_per_forward
                 ? std::pair{5.0,
                             fmt::format("launches per forward {:g} → {:g}",
                                         *before->launches_per_forward, *now.launches_per_forward)}
                 : std::pair{2.0, std::string("launches per forward did not go down")};
    case SuggestionRule::improve_memory_access:
    case SuggestionRule::raise_utilisation:
    case SuggestionRule::profile_slowest:
    case SuggestionRule::keep_going: {
      std::optional<double> was = before ? median_ms(*before) : std::nullopt;
      std::optional<double> is = median_ms(now);
      if (!now.passed()) return {1, "a correct program became incorrect"};
      if (!was || !is) return {3, "no timing to compare"};
      return *is < *was ? std::pair{5.0, fmt::format("median {:.4g} → {:.4g} ms", *was, *is)}
                        : std::pair{2.0, fmt::format("not faster: {:.4g} → {:.4g} ms", *was, *is)};
    }
    default:  // the correctness rules: fix_hang ... fix_computation
      if (now.passed()) return {5, "it passes now"};
      if (before && before->outcome != now.outcome && now.built)
        return {3, fmt::format("the outcome moved: {} → {}",
                               before->outcome ? enum_name(*before->outcome) : "none",
                               now.outcome ? enum_name(*now.outcome) : "none")};
      return {2, "the failure the feedback named remains"};
  }
}

DimensionScore follows_feedback(const AttemptEvidence& evidence) {
  const FollowedAttempt& followed = *evidence.followed;
  const Suggestion& suggestion = followed.feedback.suggestion;
  std::vector<std::string> why = {fmt::format("followed {}: {} — {}", followed.dir,
                                              enum_name(suggestion.rule), suggestion.text)};
  if (same_program(evidence.sources, followed.sources)) {
    why.push_back("the program is unchanged");
    return {Dimension::skill_compliance, 1, why};
  }
  if (!evidence.verify) {
    why.push_back("changed, but not verified");
    return {Dimension::skill_compliance, 3, why};
  }
  auto [score, what] = judge_suggestion(suggestion.rule, *evidence.verify, followed.verify);
  why.push_back(what);
  return {Dimension::skill_compliance, score, why};
}

// Whether the program shows what a subtask's kernel needs: its library, or own kernels.
bool shows_kernel(const std::string& kernel, const ProgramFeatures& f) {
  if (kernel.starts_with("cublas")) return f.library_gemm;
  if (kernel.starts_with("cudnn")) return f.library_conv || f.library_norm;
  return f.own_kernels > 0;
}

DimensionScore follows_plan(const plan::Plan& plan, const ProgramFeatures& f) {
  int asked = 0, done = 0;
  std::vector<std::string> why;
  for (const plan::Subtask& subtask : plan.subtasks) {
    ++asked;
    if (shows_kernel(subtask.kernel, f))
      ++done;
    else
      why.push_back(fmt::format("{}: no sign of its kernel {}", subtask.id, subtask.kernel));
  }
  if (plan.host.cuda_graph) {
    ++asked;
    if (f.graph_capture)
      ++done;
    else
      why.push_back("the plan asks for CUDA graph capture; the program does not capture");
  }
  why.insert(why.begin(), fmt::format("{} of {} plan choices visible in the program", done, asked));
  double score = asked == 0 ? 3 : 1 + 4.0 * done / asked;
  return {Dimension::skill_compliance, score, why};
}

}  // namespace

DimensionScore score_skill_compliance(const AttemptEvidence& evidence, const ProgramFeatures& f) {
  if (evidence.followed) return follows_feedback(evidence);
  if (evidence.plan) return follows_plan(*evidence.plan, f);
  return {Dimension::skill_compliance, 3, {"no plan or feedback to follow: neutral"}};
}

}  // namespace stitch::reward
