// build_feedback and its suggestion rules; see feedback.h. The rules are tried in a fixed order and
// the first that applies wins, so one report always gives the same single suggestion.
#include "verify/feedback.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "util/fs.h"

namespace stitch {
namespace {

using nlohmann::json;

// A run that needs more launches than this per forward pays noticeably for launch latency
// (~2-5 us each) on the small problems where it is slower than eager.
constexpr double kManyLaunches = 4;
// Profile percentages below this leave room worth chasing.
constexpr double kLowUtilisationPct = 60;
// Relative error norms at or below this are "close": an accumulation or rounding issue, not a
// wrong formula.
constexpr double kCloseRelativeError = 1e-2;

json finite_or_null(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string hack_advice(HackKind kind) {
  switch (kind) {
    case HackKind::calls_torch:
      return "Do not call PyTorch, ATen or Python: implement the computation in CUDA (cuBLAS, "
             "cuBLASLt and cuDNN are allowed).";
    case HackKind::side_stream:
      return "Run all work on the stream passed to stitch_forward, or join side streams into it "
             "with events before returning.";
    case HackKind::host_thread:
      return "Do not start host threads: launch all work from stitch_forward on the given stream.";
    case HackKind::stale_output:
      return "Write every output element on every call (outputs are poisoned before each call).";
    case HackKind::output_cache:
      return "Compute the outputs from the current inputs on every call; never reuse results "
             "across calls.";
    case HackKind::mutates_inputs:
      return "Treat inputs as read-only; use workspace buffers allocated in stitch_init.";
    case HackKind::precision_downgrade:
      return "Keep FP32 arithmetic on the fp32 track (no TF32, FP16 or BF16 math); split-precision "
             "3xTF32 is allowed if you need tensor cores.";
    case HackKind::guard_band:
      return "Fix the out-of-bounds writes: check every index against its tensor's size.";
    case HackKind::reads_answer:
      return "Do not read files, the environment or sockets: the program gets only its inputs.";
    case HackKind::hidden_work:
      return "Do all work on the given GPU from stitch_forward: no child processes, runtime "
             "compilation, CUDA IPC, other devices or dynamic loading.";
    case HackKind::tampers_judge:
      return "Do not touch the timer, the process (exit, signals, device reset) or the result files.";
    case HackKind::init_side_effect:
      return "Do no work at load time and start nothing in stitch_init that outlives it.";
    case HackKind::l2_persistence:
      return "Do not set persisting-L2 windows or limits.";
    case HackKind::persistent_kernel:
      return "Let every kernel finish within the call: no persistent kernels polling for work.";
    default:
      return fmt::format("Remove what triggered the {} check.", hack_kind_name(kind));
  }
}

std::string location(const Diagnostic& d) {
  return d.line > 0 ? fmt::format("{}:{}", d.file, d.line) : d.file;
}

std::optional<Suggestion> failure_suggestion(const VerifyReport& report, const Feedback& feedback) {
  if (report.state == VerifyState::no_gpu)
    return Suggestion{SuggestionRule::run_on_gpu,
                      "It builds and passes the static checks; nothing ran because there is no "
                      "CUDA device here. Run `stitchcuda verify` on a GPU machine."};
  if (report.state == VerifyState::infrastructure_error || !report.outcome)
    return Suggestion{SuggestionRule::infrastructure,
                      fmt::format("Verification could not run ({}); this is not the program's "
                                  "fault. Fix the setup and verify again.",
                                  report.reason)};
  switch (*report.outcome) {
    case Outcome::compile_error: {
      if (feedback.compile_errors.empty())
        return Suggestion{SuggestionRule::fix_compile_error,
                          fmt::format("Fix the build: {}.", report.reason)};
      const Diagnostic& first = feedback.compile_errors.front();
      return Suggestion{SuggestionRule::fix_compile_error,
                        fmt::format("Fix the first compiler error, {}: {} (later errors often "
                                    "follow from it).",
                                    location(first), first.message)};
    }
    case Outcome::hacked: {
      for (const auto& record : report.findings)
        if (record.finding.fatal)
          return Suggestion{SuggestionRule::remove_hack,
                            fmt::format("{} Found by the {} check: {}",
                                        hack_advice(record.finding.kind), record.origin,
                                        record.finding.detail)};
      return Suggestion{SuggestionRule::remove_hack, report.reason};
    }
    case Outcome::timeout:
      return Suggestion{SuggestionRule::fix_hang,
                        "The program did not finish in time: look for a loop whose exit depends on "
                        "other blocks (spin-waits, grid-wide sync without a cooperative launch), "
                        "__syncthreads() in a divergent branch, or a loop bound read from "
                        "uninitialised memory."};
    case Outcome::runtime_error: {
      std::string reason = lower(report.reason);
      if (contains(reason, "illegal") || contains(reason, "out of bounds") ||
          contains(reason, "misaligned") || contains(reason, "sigsegv"))
        return Suggestion{SuggestionRule::fix_memory_access,
                          fmt::format("Memory access error ({}): check every index against its "
                                      "tensor's size, that the grid covers exactly the elements, "
                                      "and the alignment assumed by vector loads (inputs may be "
                                      "unaligned).",
                                      report.reason)};
      return Suggestion{SuggestionRule::fix_runtime_error,
                        fmt::format("{}: check the status of every CUDA and library call and "
                                    "report failures through stitch_last_error.",
                                    report.reason)};
    }
    case Outcome::wrong: {
      if (feedback.wrong_outputs.empty())
        return Suggestion{SuggestionRule::fix_computation,
                          fmt::format("The outputs are wrong: {}.", report.reason)};
      for (const auto& wrong : feedback.wrong_outputs)
        if (wrong.check.nan_or_inf > 0)
          return Suggestion{
              SuggestionRule::write_every_output,
              fmt::format("{} output {} has {} NaN/Inf elements where the reference is finite: an "
                          "element left unwritten (outputs are NaN-poisoned before each call), a "
                          "read of uninitialised memory, or a race; check that the grid covers "
                          "every element and __syncthreads() guards shared memory.",
                          wrong.where, wrong.check.output_index, wrong.check.nan_or_inf)};
      const WrongOutput& wrong = feedback.wrong_outputs.front();
      const OutputCheck& c = wrong.check;
      if (c.first_mismatch_index > 0 && wrong.elements > 0 && c.mismatches * 10 < wrong.elements)
        return Suggestion{
            SuggestionRule::fix_tail_handling,
            fmt::format("{} output {}: elements before flat index {} are right and {} of {} are "
                        "off after it: check the boundary handling of the last block or tile "
                        "(sizes that are not a multiple of the tile).",
                        wrong.where, c.output_index, c.first_mismatch_index, c.mismatches,
                        wrong.elements)};
      if (std::isfinite(c.relative_error_norm) && c.relative_error_norm <= kCloseRelativeError)
        return Suggestion{
            SuggestionRule::fix_precision,
            fmt::format("{} output {} is close but outside tolerance (relative error norm {:.2e}): "
                        "accumulate in FP32 (double for long reductions), avoid fast-math "
                        "intrinsics and TF32, and follow the reference's order for reductions "
                        "such as mean and variance.",
                        wrong.where, c.output_index, c.relative_error_norm)};
      return Suggestion{
          SuggestionRule::fix_computation,
          fmt::format("{} output {} is wrong ({} of {} elements off, first at flat index {}, "
                      "relative error norm {:.2e}): check the order of operations, broadcasting, "
                      "the params' order and layout (graph.json order, the reference's layout) "
                      "and the index math.",
                      wrong.where, c.output_index, c.mismatches, wrong.elements,
                      c.first_mismatch_index, c.relative_error_norm)};
    }
    case Outcome::passed:
      return std::nullopt;
  }
  return std::nullopt;
}

Suggestion performance_suggestion(const VerifyReport& report, const Feedback& feedback) {
  for (const auto& kernel : feedback.kernels)
    if (kernel.spill_bytes > 0)
      return {SuggestionRule::reduce_spills,
              fmt::format("Kernel {} spills {} bytes with {} registers: reduce register pressure "
                          "(a smaller tile per thread, fewer live values, or __launch_bounds__).",
                          kernel.name, kernel.spill_bytes, kernel.registers)};
  std::optional<double> eager = report.speedup_vs("eager");
  if (eager && *eager < 1.0 && report.launches_per_forward &&
      *report.launches_per_forward >= kManyLaunches)
    return {SuggestionRule::fuse_launches,
            fmt::format("{:.2f}x eager with {:g} kernel launches per forward: fuse adjacent "
                        "kernels, or capture the forward in a CUDA graph, to cut launch overhead.",
                        *eager, *report.launches_per_forward)};
  if (!feedback.profile.empty()) {
    const ProfiledKernel& top = feedback.profile.front();
    std::string bottleneck = lower(top.bottleneck);
    if (contains(bottleneck, "memory") && top.dram_pct && *top.dram_pct < kLowUtilisationPct)
      return {SuggestionRule::improve_memory_access,
              fmt::format("{} takes {} and is memory-bound at only {:.0f}% of DRAM bandwidth: "
                          "vectorise (float4) and coalesce its loads and stores, and avoid reading "
                          "the same data twice.",
                          top.name, format_duration_ms(top.duration_ms), *top.dram_pct)};
    if ((contains(bottleneck, "compute") || contains(bottleneck, "latency")) && top.sm_pct &&
        *top.sm_pct < kLowUtilisationPct)
      return {SuggestionRule::raise_utilisation,
              fmt::format("{} takes {} and is {}-bound at {:.0f}% SM throughput: raise occupancy "
                          "(more blocks, fewer registers or less shared memory per block) and "
                          "give each thread independent work.",
                          top.name, format_duration_ms(top.duration_ms), top.bottleneck,
                          *top.sm_pct)};
  }
  const Speedup* slowest = nullptr;
  for (const auto& speedup : report.speedups)
    if (speedup.speedup < 1.0 && (!slowest || speedup.speedup < slowest->speedup))
      slowest = &speedup;
  if (slowest)
    return {SuggestionRule::profile_slowest,
            fmt::format("Correct but {:.2f}x {} ({} vs {}): profile it (`stitchcuda profile`) "
                        "and work on the slowest kernel.",
                        slowest->speedup, slowest->mode, format_duration_ms(slowest->candidate_ms),
                        format_duration_ms(slowest->baseline_ms))};
  return {SuggestionRule::keep_going,
          report.speedups.empty()
              ? std::string("Correct. No baselines to compare with: time the reference to see "
                            "where it stands.")
              : fmt::format("Correct and faster than every baseline (at least {:.2f}x); the next "
                            "gain is in the slowest kernel.",
                            std::min_element(report.speedups.begin(), report.speedups.end(),
                                             [](const Speedup& a, const Speedup& b) {
                                               return a.speedup < b.speedup;
                                             })
                                ->speedup)};
}

}  // namespace

std::string_view suggestion_rule_name(SuggestionRule rule) {
  constexpr std::array<std::string_view, 17> kNames = {
      "run_on_gpu",         "infrastructure",    "fix_compile_error",  "remove_hack",
      "fix_hang",           "fix_memory_access", "fix_runtime_error",  "write_every_output",
      "fix_tail_handling",  "fix_precision",     "fix_computation",    "reduce_spills",
      "fuse_launches",      "improve_memory_access", "raise_utilisation", "profile_slowest",
      "keep_going"};
  static_assert(kNames.size() == static_cast<size_t>(SuggestionRule::keep_going) + 1);
  return kNames[static_cast<size_t>(rule)];
}

Result<ProfileSummary> parse_profile_summary(const json& doc) {
  if (!doc.is_object() || !doc.contains("kernels") || !doc["kernels"].is_array())
    return make_error("profile: no 'kernels' array");
  ProfileSummary summary;
  try {
    // Unmeasured fields may be absent or null (profile_report.h): both read as "unknown".
    auto text = [](const json& entry, const char* key) {
      return entry.contains(key) && !entry[key].is_null() ? entry[key].get<std::string>()
                                                          : std::string();
    };
    auto number = [](const json& entry, const char* key) -> std::optional<double> {
      if (!entry.contains(key) || entry[key].is_null()) return std::nullopt;
      return entry[key].get<double>();
    };
    for (const auto& entry : doc["kernels"]) {
      ProfiledKernel kernel;
      kernel.name = text(entry, "name");
      kernel.duration_ms = number(entry, "duration_ms").value_or(0.0);
      kernel.bottleneck = text(entry, "bottleneck");
      kernel.dram_pct = number(entry, "dram_pct");
      kernel.sm_pct = number(entry, "sm_pct");
      summary.kernels.push_back(std::move(kernel));
    }
  } catch (const std::exception& error) {
    return make_error("profile: malformed: {}", error.what());
  }
  return summary;
}

Result<ProfileSummary> read_profile_summary(const std::filesystem::path& path) {
  STITCH_ASSIGN_OR_RETURN(std::string text, read_file(path));
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return make_error("{}: not valid JSON", path.string());
  auto summary = parse_profile_summary(doc);
  if (!summary.ok()) return summary.error().with_context(path.string());
  return summary;
}

Feedback build_feedback(const VerifyReport& report, const std::optional<ProfileSummary>& profile) {
  Feedback feedback;
  feedback.state = report.state;
  feedback.outcome = report.outcome;
  feedback.reason = report.reason;
  for (const auto& d : report.diagnostics)
    if (d.severity == "error" && feedback.compile_errors.size() < kFeedbackItems)
      feedback.compile_errors.push_back(d);
  for (const auto& output : report.output_checks)
    if (!output.check.passed && feedback.wrong_outputs.size() < kFeedbackItems)
      feedback.wrong_outputs.push_back({output.where, output.check, output.elements, output.message});
  for (bool fatal : {true, false})
    for (const auto& record : report.findings)
      if (record.finding.fatal == fatal)
        feedback.findings.push_back(fmt::format("{}{} ({}): {}", fatal ? "" : "note: ",
                                                hack_kind_name(record.finding.kind),
                                                record.origin, record.finding.detail));
  if (report.reported_timing()) {
    feedback.timed = true;
    feedback.median_ms = report.reported_timing()->median_ms;
    feedback.synced_median_ms = report.synced_timing ? report.synced_timing->median_ms : 0;
    feedback.launches_per_forward = report.launches_per_forward;
    feedback.baselines = report.speedups;
  }
  for (const auto& kernel : report.kernels)
    feedback.kernels.push_back({kernel.name, kernel.registers,
                                kernel.spill_store_bytes + kernel.spill_load_bytes,
                                kernel.shared_bytes});
  std::stable_sort(feedback.kernels.begin(), feedback.kernels.end(),
                   [](const KernelResources& a, const KernelResources& b) {
                     if (a.spill_bytes != b.spill_bytes) return a.spill_bytes > b.spill_bytes;
                     return a.registers > b.registers;
                   });
  if (feedback.kernels.size() > kFeedbackItems) feedback.kernels.resize(kFeedbackItems);
  if (profile) {
    feedback.profile = profile->kernels;
    std::stable_sort(feedback.profile.begin(), feedback.profile.end(),
                     [](const ProfiledKernel& a, const ProfiledKernel& b) {
                       return a.duration_ms > b.duration_ms;
                     });
  }
  auto failure = failure_suggestion(report, feedback);
  feedback.suggestion = failure ? *failure : performance_suggestion(report, feedback);
  return feedback;
}

json feedback_to_json(const Feedback& feedback) {
  json errors = json::array();
  for (const auto& d : feedback.compile_errors)
    errors.push_back(
        {{"file", d.file}, {"line", d.line}, {"message", d.message}, {"snippet", d.snippet}});
  json wrong = json::array();
  for (const auto& w : feedback.wrong_outputs)
    wrong.push_back({{"where", w.where},
                     {"output_index", w.check.output_index},
                     {"max_abs_error", finite_or_null(w.check.max_abs_error)},
                     {"max_abs_error_index", w.check.max_abs_error_index},
                     {"relative_error_norm", finite_or_null(w.check.relative_error_norm)},
                     {"mismatches", w.check.mismatches},
                     {"first_mismatch_index", w.check.first_mismatch_index},
                     {"nan_or_inf", w.check.nan_or_inf},
                     {"elements", w.elements},
                     {"message", w.message}});
  json timing = nullptr;
  if (feedback.timed) {
    json baselines = json::array();
    for (const auto& b : feedback.baselines)
      baselines.push_back({{"mode", b.mode}, {"baseline_ms", b.baseline_ms}, {"speedup", b.speedup}});
    timing = {{"median_ms", feedback.median_ms},
              {"synced_median_ms", feedback.synced_median_ms},
              {"launches_per_forward", feedback.launches_per_forward
                                           ? json(*feedback.launches_per_forward)
                                           : json(nullptr)},
              {"baselines", baselines}};
  }
  json kernels = json::array();
  for (const auto& k : feedback.kernels)
    kernels.push_back({{"name", k.name},
                       {"registers", k.registers},
                       {"spill_bytes", k.spill_bytes},
                       {"shared_bytes", k.shared_bytes}});
  json profile = json::array();
  for (const auto& k : feedback.profile)
    profile.push_back({{"name", k.name},
                       {"duration_ms", k.duration_ms},
                       {"bottleneck", k.bottleneck},
                       {"dram_pct", k.dram_pct ? json(*k.dram_pct) : json(nullptr)},
                       {"sm_pct", k.sm_pct ? json(*k.sm_pct) : json(nullptr)}});
  return {{"format", "stitchcuda.feedback"},
          {"version", 1},
          {"state", verify_state_name(feedback.state)},
          {"outcome", feedback.outcome ? json(outcome_name(*feedback.outcome)) : json(nullptr)},
          {"reason", feedback.reason},
          {"compile_errors", errors},
          {"wrong_outputs", wrong},
          {"findings", feedback.findings},
          {"timing", timing},
          {"kernels", kernels},
          {"profile", profile},
          {"suggestion",
           {{"rule", suggestion_rule_name(feedback.suggestion.rule)},
            {"text", feedback.suggestion.text}}}};
}

}  // namespace stitch
