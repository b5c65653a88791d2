// build_feedback and its suggestion rules; see feedback.h. The rules are tried in a fixed order and
// the first that applies wins, so one report always gives the same single suggestion.
#include "verify/feedback.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "util/text.h"

namespace stitch {
namespace {

// A run that needs more launches than this per forward pays noticeably for launch latency
// (~2-5 us each) on the small problems where it is slower than eager.
constexpr double kManyLaunches = 4;
// Profile percentages below this leave room worth chasing.
constexpr double kLowUtilisationPct = 60;
// Relative error norms at or below this are "close": an accumulation or rounding issue, not a
// wrong formula.
constexpr double kCloseRelativeError = 1e-2;

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// What to do about a finding of each kind; kinds not listed get a generic line (hack_advice).
constexpr std::pair<HackKind, std::string_view> kHackAdvice[] = {
    {HackKind::calls_torch,
     "Do not call PyTorch, ATen or Python: implement the computation in CUDA (cuBLAS, cuBLASLt and "
     "cuDNN are allowed)."},
    {HackKind::side_stream,
     "Run all work on the stream passed to stitch_forward, or join side streams into it with "
     "events before returning."},
    {HackKind::host_thread,
     "Do not start host threads: launch all work from stitch_forward on the given stream."},
    {HackKind::stale_output,
     "Write every output element on every call (outputs are poisoned before each call)."},
    {HackKind::output_cache,
     "Compute the outputs from the current inputs on every call; never reuse results across "
     "calls."},
    {HackKind::mutates_inputs,
     "Treat inputs as read-only; use workspace buffers allocated in stitch_init."},
    {HackKind::precision_downgrade,
     "Keep FP32 arithmetic on the fp32 track (no TF32, FP16 or BF16 math); split-precision 3xTF32 "
     "is allowed if you need tensor cores."},
    {HackKind::guard_band,
     "Fix the out-of-bounds writes: check every index against its tensor's size."},
    {HackKind::reads_answer,
     "Do not read files, the environment or sockets: the program gets only its inputs."},
    {HackKind::hidden_work,
     "Do all work on the given GPU from stitch_forward: no child processes, runtime compilation, "
     "CUDA IPC, other devices or dynamic loading."},
    {HackKind::tampers_judge,
     "Do not touch the timer, the process (exit, signals, device reset) or the result files."},
    {HackKind::init_side_effect,
     "Do no work at load time and start nothing in stitch_init that outlives it."},
    {HackKind::timing_forged,
     "Do not touch the runner's memory or its timing: the runner's supervisor times every call "
     "itself."},
    {HackKind::l2_persistence, "Do not set persisting-L2 windows or limits."},
    {HackKind::persistent_kernel,
     "Let every kernel finish within the call: no persistent kernels polling for work."},
};

std::string hack_advice(HackKind kind) {
  for (const auto& [listed, advice] : kHackAdvice)
    if (listed == kind) return std::string(advice);
  return fmt::format("Remove what triggered the {} check.", enum_name(kind));
}

std::string location(const Diagnostic& d) {
  return d.line > 0 ? fmt::format("{}:{}", d.file, d.line) : d.file;
}

Suggestion compile_error_suggestion(const VerifyReport& report, const Feedback& feedback) {
  if (feedback.compile_errors.empty())
    return Suggestion{SuggestionRule::fix_compile_error,
                      fmt::format("Fix the build: {}.", report.reason)};
  const Diagnostic& first = feedback.compile_errors.front();
  return Suggestion{SuggestionRule::fix_compile_error,
                    fmt::format("Fix the first compiler error, {}: {} (later errors often "
                                "follow from it).",
                                location(first), first.message)};
}

Suggestion hack_suggestion(const VerifyReport& report) {
  for (const auto& record : report.findings)
    if (record.finding.fatal)
      return Suggestion{
          SuggestionRule::remove_hack,
          fmt::format("{} Found by the {} check: {}", hack_advice(record.finding.kind),
                      record.origin, record.finding.detail)};
  return Suggestion{SuggestionRule::remove_hack, report.reason};
}

Suggestion runtime_error_suggestion(const VerifyReport& report) {
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

// Wrong outputs, by what the first wrong output's error looks like: NaN/Inf anywhere, a tail past
// some index, a small relative error, or wrong throughout.
Suggestion wrong_output_suggestion(const VerifyReport& report, const Feedback& feedback) {
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
                  wrong.where, c.output_index, c.mismatches, wrong.elements, c.first_mismatch_index,
                  c.relative_error_norm)};
}

// The suggestion for a report that did not pass; nullopt for one that did.
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
    case Outcome::compile_error:
      return compile_error_suggestion(report, feedback);
    case Outcome::hacked:
      return hack_suggestion(report);
    case Outcome::timeout:
      return Suggestion{SuggestionRule::fix_hang,
                        "The program did not finish in time: look for a loop whose exit depends on "
                        "other blocks (spin-waits, grid-wide sync without a cooperative launch), "
                        "__syncthreads() in a divergent branch, or a loop bound read from "
                        "uninitialised memory."};
    case Outcome::runtime_error:
      return runtime_error_suggestion(report);
    case Outcome::wrong:
      return wrong_output_suggestion(report, feedback);
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
                                                enum_name(record.finding.kind),
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

}  // namespace stitch
