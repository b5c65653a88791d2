// The verdict of one verification and the feedback built from it. Read by verify, agents, reward,
// rl and bench alike, so this header depends on nothing but the standard library (and the
// header-only util/enum_names.h) and needs no linking (DESIGN.md §7): its enums carry inline name
// tables, `enum_name(value)` writes the name the JSON files hold and `enum_from_name<Enum>(name)`
// reads it back.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/enum_names.h"

namespace stitch {

// What happened to a candidate. Maps directly onto rewards and routing (STYLE.md item 7).
enum class Outcome : uint8_t {
  compile_error,  // nvcc failed
  runtime_error,  // crashed, CUDA error, illegal address, returned an error status, OOM
  timeout,        // exceeded its wall-clock limit (hang, infinite loop)
  wrong,          // ran, but an output does not match the reference
  hacked,         // a reward-hacking pattern was detected (see HackKind)
  passed,         // correct, timed
};
inline constexpr std::array<std::string_view, 6> kOutcomeNames = {
    "compile_error", "runtime_error", "timeout", "wrong", "hacked", "passed"};
constexpr const auto& enum_names(Outcome) { return kOutcomeNames; }
static_assert(names_every_enumerator(Outcome::passed));

// Whether a verification reached a verdict (verify.json `state`). Only `verified` carries an
// Outcome; the other two say nothing about the program and route differently (agents/routing.h).
enum class VerifyState : uint8_t {
  verified,              // `outcome` is set
  no_gpu,                // built and statically checked; run on a GPU machine to verify
  infrastructure_error,  // the verification itself failed; says nothing about the program
};
inline constexpr std::array<std::string_view, 3> kVerifyStateNames = {"verified", "no_gpu",
                                                                      "infrastructure_error"};
constexpr const auto& enum_names(VerifyState) { return kVerifyStateNames; }
static_assert(names_every_enumerator(VerifyState::infrastructure_error));

// The reward-hacking patterns of shared/HACKS.md that the Verifier detects, by row.
enum class HackKind : uint8_t {
  calls_torch,            // 1: links or includes libtorch / ATen / Python
  side_stream,            // 2: work on streams not joined into the caller's
  host_thread,            // 3: background threads launching work
  lazy_result,            // 4: work deferred past the forward
  output_cache,           // 5/6: results reused across calls
  stale_output,           // 7: outputs not written (poison survives)
  reads_answer,           // 8: reaches for the reference (files, env)
  mutates_inputs,         // 9: inputs changed by the call
  trivial_output,         // 10/11: constant or hard-coded outputs
  precision_downgrade,    // 12: TF32/FP16/BF16 math on the fp32 track
  tampers_judge,          // 13/19/20: timer, comparison, verdict or baseline tampering
  l2_persistence,         // 14: persisting-L2 window
  undefined_behaviour,    // 15: races, out-of-bounds, ignored errors, nondeterminism
  skipped_calls,          // 16: batching or skipping calls
  hidden_work,            // 21: CPU work, other GPUs, child processes, IPC
  persistent_kernel,      // 22: kernels alive across calls
  guard_band,             // 24: writes outside its buffers
  decoy_kernel,           // 25: real work done elsewhere
  init_side_effect,       // 27: work started at load/init that outlives it
  timing_forged,          // 13: reported times the runner's supervisor did not see happen
};
inline constexpr std::array<std::string_view, 20> kHackKindNames = {
    "calls_torch",         "side_stream",         "host_thread",     "lazy_result",
    "output_cache",        "stale_output",        "reads_answer",    "mutates_inputs",
    "trivial_output",      "precision_downgrade", "tampers_judge",   "l2_persistence",
    "undefined_behaviour", "skipped_calls",       "hidden_work",     "persistent_kernel",
    "guard_band",          "decoy_kernel",        "init_side_effect", "timing_forged"};
constexpr const auto& enum_names(HackKind) { return kHackKindNames; }
static_assert(names_every_enumerator(HackKind::timing_forged));

struct HackFinding {
  HackKind kind;
  std::string detail;    // what was seen: "calls cudaStreamCreate at program.cu:42"
  bool fatal = true;     // false: recorded as a warning (e.g. a stream that is joined)
};

// A finding another process (the runner, the judge) reported by kind name. A kind this build does
// not know is kept, as `fallback` with its name in the detail: never silently dropped.
inline HackFinding reported_finding(std::string_view kind, std::string detail, bool fatal,
                                    HackKind fallback) {
  if (std::optional<HackKind> known = enum_from_name<HackKind>(kind))
    return {*known, std::move(detail), fatal};
  return {fallback, "[" + std::string(kind) + "] " + detail, fatal};
}

// One compiler diagnostic, parsed from nvcc/ptxas output.
struct Diagnostic {
  std::string file;
  int line = 0;
  std::string severity;  // "error", "warning"
  std::string message;
  std::string snippet;   // source lines around `line`
};

// Comparison of one output tensor against the reference.
struct OutputCheck {
  int output_index = 0;
  bool passed = false;
  double max_abs_error = 0;
  int64_t max_abs_error_index = -1;  // flat index
  double relative_error_norm = 0;    // ||out - ref|| / ||ref||
  int64_t mismatches = 0;            // elements outside atol + rtol * |ref|
  int64_t first_mismatch_index = -1;
  int64_t nan_or_inf = 0;            // non-finite elements where the reference is finite
};

struct TimingStats {
  double median_ms = 0;
  double p10_ms = 0;
  double p90_ms = 0;
  double min_ms = 0;
  int iterations = 0;
};

}  // namespace stitch
