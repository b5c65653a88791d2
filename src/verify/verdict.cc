#include "verify/verdict.h"

namespace stitch {

std::string_view outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::compile_error: return "compile_error";
    case Outcome::runtime_error: return "runtime_error";
    case Outcome::timeout: return "timeout";
    case Outcome::wrong: return "wrong";
    case Outcome::hacked: return "hacked";
    case Outcome::passed: return "passed";
  }
  return "unknown";
}

std::string_view hack_kind_name(HackKind kind) {
  switch (kind) {
    case HackKind::calls_torch: return "calls_torch";
    case HackKind::side_stream: return "side_stream";
    case HackKind::host_thread: return "host_thread";
    case HackKind::lazy_result: return "lazy_result";
    case HackKind::output_cache: return "output_cache";
    case HackKind::stale_output: return "stale_output";
    case HackKind::reads_answer: return "reads_answer";
    case HackKind::mutates_inputs: return "mutates_inputs";
    case HackKind::trivial_output: return "trivial_output";
    case HackKind::precision_downgrade: return "precision_downgrade";
    case HackKind::tampers_judge: return "tampers_judge";
    case HackKind::l2_persistence: return "l2_persistence";
    case HackKind::undefined_behaviour: return "undefined_behaviour";
    case HackKind::skipped_calls: return "skipped_calls";
    case HackKind::hidden_work: return "hidden_work";
    case HackKind::persistent_kernel: return "persistent_kernel";
    case HackKind::guard_band: return "guard_band";
    case HackKind::decoy_kernel: return "decoy_kernel";
    case HackKind::init_side_effect: return "init_side_effect";
  }
  return "unknown";
}

}  // namespace stitch
