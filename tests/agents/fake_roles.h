// Fakes of the loop's roles (agents/roles.h) for the engine, routing and resume tests: a scripted
// Planner, a Coder that writes a tiny source recording its try number and variant, a Verifier that
// answers from a script keyed by scope and try (and logs every call, durably, to a file, so a test
// can tell whether an attempt was ever verified twice, even across a killed process), and a
// refine policy with fixed candidates.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "agents/roles.h"
#include "util/fs.h"
#include "verify/feedback.h"

namespace stitch::agents::testing {

using nlohmann::json;

class FakePlanner final : public Planner {
 public:
  std::vector<std::string> subtask_ids = {"s00_matmul", "s01_elementwise"};
  bool refuse = false;
  int max_versions = 10;  // beyond this, exhausted
  std::vector<PlanRequest> requests;

  Result<PlanOutcome> plan(const PlanRequest& request) override {
    requests.push_back(request);
    PlanOutcome outcome;
    if (refuse) {
      outcome.refusal.reason = "node 'conv' (aten.convolution.default): not covered";
      return outcome;
    }
    if (request.version > max_versions) {
      outcome.exhausted = true;
      return outcome;
    }
    PlanDraft draft;
    draft.subtask_ids = subtask_ids;
    draft.options = {{"level", request.version}};
    draft.summary = fmt::format("{} subtasks", subtask_ids.size());
    STITCH_TRY(write_file_atomic(
        request.plan_file, json{{"version", request.version}, {"subtasks", subtask_ids}}.dump()));
    outcome.draft = draft;
    return outcome;
  }
};

class FakeCoder final : public Coder {
 public:
  CoderGranularity mode = CoderGranularity::whole_program;
  // Scopes ("integration", "subtask:1") on which the Coder gives up after this many tries.
  std::map<std::string, int> stagnate_after;
  // Set: every try writes this same program (a deterministic Coder that ignores the feedback).
  std::optional<std::string> fixed_program;
  // Set: a stagnant try leaves this in the attempt's why.txt (as the LLM Coder leaves transcripts).
  std::string stagnant_note;
  std::vector<CodeRequest> requests;

  CoderGranularity granularity() const override { return mode; }

  static std::string scope(const CodeRequest& request) {
    if (!request.variant.empty() && request.variant.contains("refine")) return "refine";
    return request.subtask < 0 ? "integration" : fmt::format("subtask:{}", request.subtask);
  }

  Result<CodeOutcome> write(const CodeRequest& request) override {
    requests.push_back(request);
    CodeOutcome outcome;
    const int try_number = static_cast<int>(request.tried_variants.size()) + 1;
    if (auto limit = stagnate_after.find(scope(request));
        limit != stagnate_after.end() && try_number > limit->second) {
      outcome.why_not = "no further idea";
      if (!stagnant_note.empty())
        STITCH_TRY(write_file_atomic(request.out_dir.parent_path() / "why.txt", stagnant_note));
      return outcome;
    }
    CodeDraft draft;
    draft.variant = request.variant.empty() ? json{{"try", try_number}} : request.variant;
    draft.label = fmt::format("{} try {}", scope(request), try_number);
    draft.tokens = 100;
    const auto source = request.out_dir / "program.cu";
    STITCH_TRY(write_file_atomic(
        source, fixed_program ? *fixed_program
                              : fmt::format("// plan v{} {} try {}\n{}\n", request.plan_version,
                                            scope(request), try_number, draft.variant.dump())));
    draft.sources = {source};
    outcome.draft = draft;
    return outcome;
  }
};

// The verifier's answer for one attempt.
struct FakeAnswer {
  VerifyState state = VerifyState::verified;
  std::optional<Outcome> outcome = Outcome::passed;
  double median_ms = 1.0, p10_ms = 0.99, p90_ms = 1.01;
  std::string reason;
};

inline FakeAnswer fails(Outcome outcome, std::string reason) {
  FakeAnswer answer;
  answer.outcome = outcome;
  answer.reason = std::move(reason);
  return answer;
}
inline FakeAnswer passes_in(double median_ms, double p10_ms, double p90_ms) {
  FakeAnswer answer;
  answer.median_ms = median_ms;
  answer.p10_ms = p10_ms;
  answer.p90_ms = p90_ms;
  return answer;
}
// A verification that gave no verdict: no_gpu or infrastructure_error.
inline FakeAnswer ends(VerifyState state, std::string reason = "") {
  FakeAnswer answer;
  answer.state = state;
  answer.outcome = std::nullopt;
  answer.reason = std::move(reason);
  return answer;
}

class FakeVerifier final : public CandidateVerifier {
 public:
  // Key "<scope>#<try>" from the draft's label ("integration try 2"), or "refine:<block>" for a
  // refine variant's block value. Missing keys: passed at 1 ms.
  std::map<std::string, FakeAnswer> script;
  std::filesystem::path log;  // one line per call: the attempt directory's name
  int calls = 0;

  Result<AttemptResult> verify(const VerifyJob& job) override {
    ++calls;
    if (!log.empty()) {
      const std::string line = job.attempt_dir.filename().string() + "\n";
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd < 0) return make_error("cannot open the fake verifier's log");
      (void)!::write(fd, line.data(), line.size());
      ::fsync(fd);
      ::close(fd);
    }
    std::string key = job.draft->label;
    if (job.draft->variant.contains("refine"))
      key = fmt::format("refine:{}", job.draft->variant["refine"].dump());
    FakeAnswer answer;
    if (auto found = script.find(key); found != script.end()) answer = found->second;
    AttemptResult result;
    result.state = answer.state;
    result.outcome = answer.state == VerifyState::verified ? answer.outcome : std::nullopt;
    result.reason = answer.reason;
    if (result.passed()) {
      result.timing = Timing{answer.median_ms, answer.p10_ms, answer.p90_ms};
      result.baselines_ms = {{"eager", 2.0}};
    }
    Feedback feedback;
    feedback.state = result.state;
    feedback.outcome = result.outcome;
    feedback.reason = key;  // which script entry answered
    feedback.suggestion = {
        result.passed() ? SuggestionRule::keep_going : SuggestionRule::fix_computation, "fix it"};
    result.suggestion_rule = enum_name(feedback.suggestion.rule);
    result.suggestion = feedback.suggestion.text;
    STITCH_TRY(write_feedback(job.attempt_dir / "feedback.json", feedback));
    return result;
  }
};

class FakeRefiner final : public RefinePolicy {
 public:
  std::vector<RefineCandidate> list;
  std::optional<ProfileSummary> seen_profile;
  Result<std::vector<RefineCandidate>> candidates(
      const fs::path&, const json&, const std::optional<ProfileSummary>& profile) override {
    seen_profile = profile;
    return list;
  }
};

class FakeProfiler final : public ProgramProfiler {
 public:
  int calls = 0;
  std::optional<ProfileSummary> profile(const fs::path&, const fs::path&,
                                        const CodeDraft&) override {
    ++calls;
    ProfileSummary summary;
    summary.kernels.push_back({"s00_matmul_kernel", 0.8, "compute", std::nullopt, 70.0});
    return summary;
  }
};

}  // namespace stitch::agents::testing
