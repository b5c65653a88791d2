// Profiling one built program: stitch-runner --profile for the timeline of one forward, ncu on the
// top kernels for their counters, the bottleneck rules over both. Every process goes through a
// ProcessRunner (timeouts, process groups killed; a fake in tests), so the whole pipeline runs on
// a CPU in tests with canned runner and ncu outputs.
//
// The ncu runs start the runner as a short verification (--self-test, one check set, no timed
// iterations, no launch counting) with --no-network-isolation and --no-seccomp: ncu talks to the
// process it profiles over a local socket, which a fresh network namespace cuts off. The program
// has been through `verify` in its sandbox before anyone profiles it; profiles are measurements,
// not verdicts.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "util/process.h"
#include "util/result.h"
#include "verify/profile/profile_report.h"
#include "verify/profile/profile_rules.h"

namespace stitch {

// A shapes-only slots.json (docs/verify-protocol.md) from graph.json (docs/graph-format.md):
// params, inputs (with their distributions) and outputs with dtype, shape and strides, no IPC
// handles — what `stitch-runner --self-test --slots` reads.
Result<nlohmann::json> self_test_slots_from_graph(const nlohmann::json& graph);

// $STITCH_RUNNER, stitch-runner beside this executable or one directory up, PATH.
std::optional<std::filesystem::path> locate_stitch_runner();

struct ProfileRequest {
  std::filesystem::path runner;    // stitch-runner
  std::filesystem::path program;   // the built .so
  std::filesystem::path slots;     // shapes-only slots.json; empty: the runner's built-in spec
  std::filesystem::path work_dir;  // timeline.json, ncu logs, sandboxes (created)
  int warmup = 3;
  int top_kernels = 3;
  bool use_ncu = true;
  std::optional<std::filesystem::path> ncu;  // nullopt: locate_ncu()
  double runner_timeout_s = 600;
  double ncu_timeout_s = 600;  // per kernel
  double call_timeout_s = 60;
  std::optional<GpuPeaks> peaks;  // overrides the table (peaks_for_device)
  BottleneckRules rules;
};

// An Error when the timeline could not be made (no GPU, the program failed to load, init or run:
// the message says which); ncu trouble is never an Error, only notes in the report.
Result<ProfileReport> profile_program(ProcessRunner& process_runner, const ProfileRequest& request);

}  // namespace stitch
