// runner.json: what the runner hands back (docs/verify-protocol.md, "Runner phases" step 5). Built
// up under a mutex, because the watchdog thread may have to write it while the main thread is
// stuck in the driver. The worker sends it to the supervisor, which adds its own fields (nonce,
// supervisor, sandbox.layers: supervisor.h) and writes it atomically (temporary + rename).
//
// Format (version 1; runner_report.h is its typed reader):
//   format "stitchcuda.runner", version 1, status (RunStatus names), message, phase (where it
//   stopped), nonce (echoed from --nonce-stdin by the supervisor), self_test, program,
//   device {index, name, l2_bytes, sm_count},
//   sandbox {work_dir, network_namespace, network_detail, seccomp, seccomp_detail,
//            removed_environment [names], notes [..], layers [{name, set_up, detail}]},
//   supervisor {..} (written by the supervisor only, with `nonce` and the layers `pid_namespace`
//            and `supervisor`: runner/supervisor.h),
//   threads {before_dlopen, after_dlopen, after_init, max_after_forward},
//   init_ms, init_launches,
//   findings [{kind (HackKind name), detail, fatal}],
//   check_sets [{index, run, canaries_intact, inputs_unchanged, poison_remaining [per output],
//                unjoined_elements [per output], launches, gpu_ms, wall_ms, copied_to_slot}],
//   determinism {checked, identical, outputs [{bit_mismatches, max_abs_diff}]},
//   timing {warmup, iterations, sets, l2_flush_bytes, launch_counting, gpu_ms [..], wall_ms [..],
//           synced_ms [..], empty_sync_gap_ms [..] (stream end → after-synchronize event for a
//           call that launches nothing, 20 samples), spot_iterations [..], rechecks [{iteration,
//           bit_mismatches, tolerance_mismatches, max_abs_diff}], canaries_intact,
//           inputs_unchanged},
//   launches {available, detail, runner_stream_id, per_forward [..], kernel_names {name: count}},
//   idle_check {after_init_ms, before_timing_ms}.
// Arrays of times are raw per-iteration values in milliseconds; the orchestrator computes stats.
#pragma once

#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "runner/channel.h"
#include "runner/run_status.h"
#include "util/result.h"

namespace stitch::runner {

// Process exit codes (documented in --help).
inline constexpr int kExitOk = 0;
inline constexpr int kExitCandidateFailed = 1;  // init/forward failed, CUDA error, ABI, dlopen
inline constexpr int kExitUsage = 2;
inline constexpr int kExitNoDevice = 3;
inline constexpr int kExitSetupFailed = 4;
inline constexpr int kExitTimeout = 5;
inline constexpr int kExitReportUnwritable = 6;
int exit_code_for(RunStatus status);

class ReportBuilder {
 public:
  explicit ReportBuilder(std::filesystem::path result_path);

  // Runs `edit` on the document under the lock. `edit` must not call into CUDA or the program.
  template <typename Edit>
  void update(Edit&& edit) {
    std::lock_guard<std::mutex> lock(mutex_);
    edit(doc_);
  }

  // Findings of one kind are capped (the first few details are enough to act on).
  void add_finding(std::string_view kind, std::string detail, bool fatal = true);
  bool has_finding(std::string_view kind) const;
  void set_status(RunStatus status, std::string message);
  RunStatus status() const;
  void set_phase(std::string phase);

  // In the worker (supervisor.h): write() sends the document to the supervisor instead of writing
  // the file, and mark() sends timing marks. Without a channel (the supervisor's own builder,
  // tests) write() writes the file and mark() does nothing.
  void send_through(WorkerChannel* channel) { channel_ = channel; }
  void mark(MarkKind kind, int iteration = 0);

  Status write();

 private:
  mutable std::mutex mutex_;
  WorkerChannel* channel_ = nullptr;
  std::filesystem::path path_;
  nlohmann::json doc_;
  RunStatus status_ = RunStatus::ok;
};

}  // namespace stitch::runner
