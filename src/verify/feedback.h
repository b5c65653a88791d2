// Feedback for whoever writes the next attempt (the Coder, an LLM, a person): what went wrong or
// how fast it was, in the few facts that matter, and ONE concrete suggestion chosen by fixed rules
// (so the same report always gives the same advice, and each rule is unit-tested). Built from a
// VerifyReport and, when `stitchcuda profile` has written one, a profile summary; written as
// feedback.json beside verify.json.
//
// feedback.json (format "stitchcuda.feedback", version 1):
//   state, outcome (or null), reason
//   compile_errors  [{file, line, message, snippet}]             (first few)
//   declarations    [{identifier, name, path, line_begin, line_end, text}]  the declarations the
//                   compile errors are about, from the documentation index (declaration_notes.h);
//                   absent or [] when there were none or no index
//   wrong_outputs   [{where, output_index, max_abs_error, max_abs_error_index, relative_error_norm,
//                     mismatches, first_mismatch_index, nan_or_inf, elements, message}]  (first few)
//   findings        ["kind (origin): detail"]                     (fatal first)
//   timing          {median_ms, synced_median_ms, launches_per_forward,
//                    baselines [{mode, baseline_ms, speedup}]}   (null when not timed)
//   kernels         [{name, registers, spill_bytes, shared_bytes}] (top by spills, then registers)
//   profile         [{name, duration_ms, bottleneck, dram_pct, sm_pct}] (slowest first; [] if none;
//                    dram_pct / sm_pct null when not measured)
//   suggestion      {rule, text}
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"
#include "verify/verify_report.h"

namespace stitch {

// The part of profile.json feedback reads: {"kernels": [{name, duration_ms, bottleneck, dram_pct,
// sm_pct}]}. bottleneck is free text from the profiler ("memory", "compute", "latency", ...).
struct ProfiledKernel {
  std::string name;
  double duration_ms = 0;
  std::string bottleneck;
  std::optional<double> dram_pct;  // achieved DRAM bandwidth, % of peak; nullopt: not measured
  std::optional<double> sm_pct;    // SM throughput, % of peak; nullopt: not measured
};

struct ProfileSummary {
  std::vector<ProfiledKernel> kernels;
};

// profile.json's kernels as feedback reads them, and the same record written back (the loop keeps
// the profile refine ranked its candidates by, refine_profile.json).
Result<ProfileSummary> parse_profile_summary(const nlohmann::json& doc);
Result<ProfileSummary> read_profile_summary(const std::filesystem::path& path);
nlohmann::json profile_summary_to_json(const ProfileSummary& profile);

// Which rule chose the suggestion (stable names: they are data for the agents and tests).
enum class SuggestionRule : uint8_t {
  run_on_gpu,           // no_gpu: nothing ran
  infrastructure,       // the machinery failed, not the program
  fix_compile_error,    // the first compiler error
  remove_hack,          // the first fatal finding
  fix_hang,             // timeout
  fix_memory_access,    // illegal address / out of bounds / canaries
  fix_runtime_error,    // other runtime errors
  write_every_output,   // wrong with NaN/Inf: uninitialised output or race
  fix_tail_handling,    // wrong only past some index: bounds of the last block/tile
  fix_precision,        // wrong by a small relative error: accumulation order/precision
  fix_computation,      // wrong otherwise
  reduce_spills,        // passed, a kernel spills registers
  fuse_launches,        // passed, slower than eager with many launches per forward
  improve_memory_access,  // passed, profile: memory-bound at low DRAM%
  raise_utilisation,    // passed, profile: compute/latency-bound at low SM%
  profile_slowest,      // passed, slower than a baseline, nothing more specific known
  keep_going,           // passed and faster than every baseline
};
inline constexpr std::array<std::string_view, 17> kSuggestionRuleNames = {
    "run_on_gpu",        "infrastructure",        "fix_compile_error", "remove_hack",
    "fix_hang",          "fix_memory_access",     "fix_runtime_error", "write_every_output",
    "fix_tail_handling", "fix_precision",         "fix_computation",   "reduce_spills",
    "fuse_launches",     "improve_memory_access", "raise_utilisation", "profile_slowest",
    "keep_going"};
constexpr const auto& enum_names(SuggestionRule) { return kSuggestionRuleNames; }
static_assert(names_every_enumerator(SuggestionRule::keep_going));

struct Suggestion {
  SuggestionRule rule = SuggestionRule::keep_going;
  std::string text;
};

struct WrongOutput {
  std::string where;
  OutputCheck check;
  int64_t elements = 0;
  std::string message;
};

struct KernelResources {
  std::string name;
  int registers = 0;
  int64_t spill_bytes = 0;  // stores + loads
  int64_t shared_bytes = 0;
};

// The declaration a compile error is about (an unknown, perhaps misspelled, identifier or a
// function called with the wrong arguments), as the documentation index holds it.
struct DeclarationNote {
  std::string identifier;  // as the compiler's message or the failing line named it
  std::string name;        // the declared name (differs when the identifier was misspelled)
  std::string path;
  int line_begin = 0;
  int line_end = 0;
  std::string text;  // the declaration's lines
};

struct Feedback {
  VerifyState state = VerifyState::verified;
  std::optional<Outcome> outcome;
  std::string reason;
  std::vector<Diagnostic> compile_errors;
  std::vector<DeclarationNote> declarations;  // attach_declarations (declaration_notes.h)
  std::vector<WrongOutput> wrong_outputs;
  std::vector<std::string> findings;
  bool timed = false;
  double median_ms = 0;
  double synced_median_ms = 0;
  std::optional<double> launches_per_forward;
  std::vector<Speedup> baselines;
  std::vector<KernelResources> kernels;
  std::vector<ProfiledKernel> profile;
  Suggestion suggestion;
};

// How many compile errors, wrong outputs and kernels feedback keeps.
inline constexpr size_t kFeedbackItems = 3;

Feedback build_feedback(const VerifyReport& report,
                        const std::optional<ProfileSummary>& profile = std::nullopt);

// feedback.json, written and read back (feedback_json.cc). The reader refuses a document that is
// not a version 1 feedback.json, or a field of the wrong type, with an Error naming it.
nlohmann::json feedback_to_json(const Feedback& feedback);
Result<Feedback> feedback_from_json(const nlohmann::json& doc);
Result<Feedback> read_feedback(const std::filesystem::path& path);
Status write_feedback(const std::filesystem::path& path, const Feedback& feedback);

}  // namespace stitch
