// stitch-runner's trusted half (docs/verify-protocol.md "Supervisor and worker"). The supervisor
// never loads the candidate. It keeps the nonce (read from stdin before anything else, in memory
// the worker does not inherit), forks the worker — optionally as PID 1 of a PID namespace of its
// own — with nothing but one end of a socketpair (channel.h) and /dev/null as stdin, times the
// worker's call marks with its own clock, enforces an overall deadline by killing the worker (and
// with it its namespace), and writes runner.json itself, atomically, once no process of the
// worker is left: the worker's report after validation (format, size, status), plus what only the
// supervisor knows — the nonce, how the worker ended, the timing cross-check (timing_check.h) and
// the `pid_namespace` and `supervisor` entries of `sandbox.layers`. A worker that dies without a
// valid report, breaks the protocol, or blames the machine (setup_failed, no_device) after the
// candidate was loaded ends `crashed`: the candidate's fault, never the infrastructure's.
//
// runner.json fields the supervisor owns (a worker's values of them are replaced):
//   nonce;
//   supervisor {worker {pid, exit_code, signal, report_received, protocol_error},
//               deadline_s, timed_out, wall_ms, candidate_loaded,
//               timing_check {calls, call_ms [..], loop_ms, passed, violations [..]}};
//   sandbox.layers [{name: "pid_namespace" | "supervisor", set_up, detail}] (other layers are the
//   worker's, passed through).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "runner/channel.h"
#include "runner/timing_check.h"
#include "util/result.h"

namespace stitch::runner {

// The nonce, in a private page marked MADV_WIPEONFORK (the worker's copy reads as zeros) and
// wiped again by the worker before it runs anything.
class SecretNonce {
 public:
  SecretNonce();
  ~SecretNonce();
  SecretNonce(const SecretNonce&) = delete;
  SecretNonce& operator=(const SecretNonce&) = delete;

  // Reads one line (at most 256 bytes, without the newline) from `fd`, byte by byte so nothing is
  // left in a stdio buffer, then points `fd` at /dev/null.
  Status read_line(int fd);
  std::string_view view() const;
  // Zeroes the page (the worker calls it first thing).
  void wipe();
  bool wipe_on_fork() const { return wipe_on_fork_; }

 private:
  char* page_ = nullptr;
  size_t size_ = 0;
  bool wipe_on_fork_ = false;
};

enum class WorkerPidNamespace { inherit, own };

struct SupervisorOptions {
  std::filesystem::path result;  // runner.json; empty: printed to stdout
  double deadline_s = 0;         // the worker's whole run; 0: none
  WorkerPidNamespace worker_pid_namespace = WorkerPidNamespace::inherit;
  // The orchestrator's PID namespace ("pid:[N]", util/pid_namespace.h), to say whether this
  // runner lives in another one; empty: not given.
  std::string orchestrator_pid_namespace;
  // A verification (not a profile): statuses that blame the machine are not trusted once the
  // candidate is loaded, and the reported times are cross-checked.
  bool verification = true;
  TimingCheckLimits timing;
};

// The worker's body: runs in the forked child with its end of the channel; returns its exit code.
using WorkerEntry = std::function<int(WorkerChannel& channel)>;

// Runs the worker to its end, writes runner.json; returns the runner's exit code (exit_code_for
// the final status; kExitReportUnwritable when runner.json cannot be written).
int supervise(const SupervisorOptions& options, SecretNonce& nonce, const WorkerEntry& worker);

}  // namespace stitch::runner
