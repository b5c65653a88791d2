// runner.json `status`: how a run of stitch-runner ended. One enum and one name table for the
// runner that writes it (report.h) and the orchestrator that reads it (runner_report.h);
// header-only and dependency-free, so the reader needs nothing of the runner's CUDA code.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "verify/verdict.h"

namespace stitch::runner {

enum class RunStatus : uint8_t {
  ok,
  init_failed,     // stitch_init returned non-zero
  forward_failed,  // stitch_forward returned non-zero
  cuda_error,      // a CUDA error surfaced after a call (illegal address, launch failure, ...)
  abi_mismatch,    // stitch_abi_version() != STITCH_ABI_VERSION
  dlopen_failed,   // the library did not load or lacks a symbol
  timeout,         // the runner's own watchdog fired (hang, persistent kernel)
  no_device,       // no CUDA device visible: not the candidate's fault
  setup_failed,    // the runner could not set up (slots.json, IPC, memory): not the candidate's
  // Written by the supervisor only (runner/supervisor.h): the worker died without a valid report
  // (exit_group, a signal, abort), broke the channel protocol, or blamed the machine after the
  // candidate had been loaded. The candidate's fault: runtime_error, never infrastructure_error.
  crashed,
};
inline constexpr std::array<std::string_view, 10> kRunStatusNames = {
    "ok",      "init_failed", "forward_failed", "cuda_error", "abi_mismatch", "dlopen_failed",
    "timeout", "no_device",   "setup_failed",   "crashed"};
constexpr const auto& enum_names(RunStatus) { return kRunStatusNames; }
static_assert(names_every_enumerator(RunStatus::crashed));

}  // namespace stitch::runner
