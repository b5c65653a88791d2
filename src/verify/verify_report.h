// VerifyReport: everything one verification found, and its JSON form, verify.json, written into the
// attempt directory. The Verifier (verifier.h) fills it; feedback (feedback.h), the agents, the
// reward and the RL side read it.
//
// verify.json (format "stitchcuda.verify", version 1):
//   state        "verified" | "no_gpu" | "infrastructure_error"
//   outcome      Outcome name (verdict.h), or null unless state is "verified". no_gpu: built and
//                statically checked, nothing ran (no CUDA device here). infrastructure_error: the
//                judge, the runner's own setup, the compiler or the audit failed for reasons that say
//                nothing about the program; neither counts as a verdict on it.
//   reason       one line: why this outcome ("" when passed)
//   summary      3-6 human lines (the same text `stitchcuda verify` prints)
//   track, tolerance {atol, rtol, rel_err_norm_max}, arch, gpu, capture_dir, sources [..]
//   insecure_sandbox  [layer names]: required sandbox layers that were missing and waived by
//                --insecure-sandbox ("compiler.<layer>" for the nvcc sandbox's); empty normally
//   build        {ok, cache_hit, seconds, library, failure, command,
//                 sandbox [{name, set_up, detail}] (the nvcc sandbox's layers; empty on a hit),
//                 diagnostics [{file, line, severity, message, snippet}],
//                 kernels [{name, arch, registers, spill_store_bytes, spill_load_bytes,
//                           stack_frame_bytes, shared_bytes, barriers}]}
//   findings     [{origin ("source" | "library" | "runner" | "judge"), kind, detail, fatal}]
//   runner       {ran, status, reason, init_ms, launches_per_forward (median, null: not counted),
//                 kernel_launches {name: count}, deterministic,
//                 sandbox [{name, set_up, detail}] (runner.json's layers, sandbox/layers.h)}
//   timing       {protocol, synced, wall: {median_ms, p10_ms, p90_ms, min_ms, iterations} | null,
//                 speedup_basis: "stream" | "synced", basis_detail}. protocol: CUDA events on the
//                caller's stream around stitch_forward (the runner's gpu_ms); synced: start event
//                to an event recorded after cudaDeviceSynchronize. speedup_basis says which one
//                the speedups use (timing_basis.h: "stream" unless work ran outside the caller's
//                stream); the baselines are timed with the same rule.
//   outputs      [{where, output_index, passed, max_abs_error, max_abs_error_index,
//                  relative_error_norm, mismatches, first_mismatch_index, nan_or_inf, elements,
//                  message, degenerate_reference}]   (null for an infinite error)
//   comparison   {ran, messages [..], degenerate_reasons [..]}
//   baselines    {error, from_cache, modes {eager: {median_ms, p10_ms, p90_ms, min_ms,
//                 iterations, compile_s} | {error}}}
//   speedups     {mode: baseline median / candidate synced median}
//   steps        [{name, seconds, status ("ok" | "failed" | "skipped"), detail}]; names: build,
//                static_checks, library_audit, baseline, harness_start, reference, runner,
//                comparison, judge_stop
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sandbox/layers.h"
#include "util/result.h"
#include "verify/build/diagnostics.h"
#include "verify/judge/judge_client.h"
#include "verify/timing_basis.h"
#include "verify/track.h"
#include "verify/verdict.h"

namespace stitch {

struct VerifyStep {
  std::string name;
  double seconds = 0;
  std::string status = "ok";  // "ok", "failed", "skipped"
  std::string detail;
};

// A hack finding and the layer that saw it.
struct FindingRecord {
  std::string origin;  // "source", "library", "runner", "judge"
  HackFinding finding;
};

// One output of one check set or spot slot, as the judge compared it.
struct CheckedOutput {
  std::string where;  // "check set 0", "spot slot 1"
  OutputCheck check;
  int64_t elements = 0;
  std::string message;
  bool degenerate_reference = false;
  int64_t exact_reference_elements = 0;  // passed against the FP64 reference (judge_client.h)
};

struct Speedup {
  std::string mode;
  double baseline_ms = 0;
  double candidate_ms = 0;
  double speedup = 0;  // baseline_ms / candidate_ms
};

struct VerifyReport {
  VerifyState state = VerifyState::verified;
  std::optional<Outcome> outcome;
  std::string reason;
  std::vector<std::string> summary;

  Track track = Track::fp32;
  double rel_err_norm_max = 0;  // from the judge, when it compared
  std::string arch;
  std::string gpu_name;
  std::string capture_dir;
  std::vector<std::string> sources;
  // Required sandbox layers that were missing and waived (--insecure-sandbox): the verdict stands,
  // flagged. Empty when every layer was set up.
  std::vector<std::string> insecure_sandbox;

  // Build.
  bool built = false;
  bool build_cache_hit = false;
  double build_seconds = 0;
  std::string library_path;
  std::string build_failure;
  std::vector<std::string> build_command;
  std::vector<Diagnostic> diagnostics;
  std::vector<PtxasKernelReport> kernels;
  std::vector<sandbox::LayerReport> build_sandbox;  // the nvcc sandbox's layers

  std::vector<FindingRecord> findings;

  // Runner.
  bool runner_ran = false;
  std::string runner_status;  // runner.json status, or how the process ended
  std::string runner_reason;
  double init_ms = 0;
  std::optional<double> launches_per_forward;
  std::vector<std::pair<std::string, int>> kernel_launches;
  bool deterministic = true;
  std::vector<sandbox::LayerReport> runner_sandbox;  // the runner's isolation layers
  std::optional<TimingStats> timing;         // protocol time (gpu_ms)
  std::optional<TimingStats> synced_timing;  // to device idle (synced_ms)
  std::optional<TimingStats> wall_timing;
  // Which of timing / synced_timing speedups use, and why (timing_basis.h).
  TimingBasis timing_basis = TimingBasis::synced;
  std::string timing_basis_detail;
  // The basis's stats: what the report calls the program's time.
  const std::optional<TimingStats>& reported_timing() const {
    return timing_basis == TimingBasis::stream ? timing : synced_timing;
  }

  // Judge.
  bool compared = false;
  std::vector<CheckedOutput> output_checks;
  std::vector<std::string> comparison_messages;
  std::vector<std::string> degenerate_reasons;

  // Baselines.
  std::vector<BaselineTiming> baselines;
  std::string baseline_error;
  bool baselines_from_cache = false;
  std::vector<Speedup> speedups;

  std::vector<VerifyStep> steps;

  bool passed() const { return outcome == Outcome::passed; }
  bool has_fatal_finding() const;
  const VerifyStep* step(std::string_view name) const;
  std::optional<double> speedup_vs(std::string_view mode) const;
};

// Median and linear-interpolated percentiles (numpy's default, as the judge's timing.py computes
// them); nullopt for no samples.
std::optional<TimingStats> timing_stats(std::vector<double> times_ms);

// Speedups of `candidate_ms` over each baseline that has stats.
std::vector<Speedup> compute_speedups(const std::vector<BaselineTiming>& baselines,
                                      double candidate_ms);

// The 3-6 line human summary.
std::vector<std::string> summarize(const VerifyReport& report);

// verify.json, written and read back (verify_report_json.cc). The reader refuses a document that
// is not a version 1 verify.json, or a field of the wrong type, with an Error naming it. What the
// file does not hold reads back as its default: PtxasKernelReport's mangled name, constant bytes
// and ptxas time; a Speedup's times are the baseline's median and the reported timing's.
nlohmann::json verify_report_to_json(const VerifyReport& report);
Result<VerifyReport> verify_report_from_json(const nlohmann::json& doc);
Result<VerifyReport> read_verify_report(const std::filesystem::path& path);
Status write_verify_report(const std::filesystem::path& path, const VerifyReport& report);

// "12.3 us" / "1.234 ms" / "2.50 s".
std::string format_duration_ms(double ms);

}  // namespace stitch
