// One run of the runner on one candidate: the phases of docs/verify-protocol.md after the sandbox
// — device set-up, buffers, load, init, correctness, timing — and the dynamic hack checks around
// every call. session.cc holds set-up, the call itself and correctness; checks.cc the checks around
// a call; timing.cc the timing phase. What a profile run shares with it is in program_session.h.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "runner/device_memory.h"
#include "runner/launch_counter.h"
#include "runner/options.h"
#include "runner/program_session.h"
#include "runner/report.h"
#include "runner/spec.h"
#include "runner/watchdog.h"

namespace stitch::runner {

// One set of buffers the program is called on, and the ABI views of them.
struct IoSet {
  std::vector<GuardedBuffer> inputs;
  std::vector<GuardedBuffer> outputs;
  std::vector<stitch_tensor> input_views;
  std::vector<stitch_tensor> output_views;
};

struct CallOptions {
  std::string label;         // "check set 0", "timing iteration 12"
  bool snapshot = false;     // copy the outputs on the caller's stream right after the call returns
  int timed_iteration = -1;  // >= 0: a timed call, marked to the supervisor (timing_check.h)
};

struct CallRecord {
  double gpu_ms = 0;     // events on the caller's stream around stitch_forward (protocol's time)
  double synced_ms = 0;  // start event → event recorded after cudaDeviceSynchronize (side streams)
  double wall_ms = 0;    // host clock around the call and the device synchronize
  int launches = -1;     // -1: not counted
};

// Raw per-iteration results of the timing phase.
struct TimingLog {
  std::vector<double> gpu_ms, synced_ms, wall_ms;
  // synced_ms - gpu_ms for a call that launches nothing: the fixed cost of the device-wide
  // synchronize. The orchestrator compares each iteration's gap with it (off-stream work).
  std::vector<double> empty_sync_gap_ms;
  std::vector<int> spot_iterations;
  bool canaries_intact = true;
  bool inputs_unchanged = true;
};

class Session : public ProgramSession {
 public:
  using ProgramSession::ProgramSession;

  // Runs every phase; the outcome is in the report (status, findings). Returns the exit code.
  int run();

 private:
  Result<Flow> setup_device();
  Status prepare_buffers();
  Result<IoSet> allocate_io_set();
  Status fill_input(void* data, const TensorSpec& tensor, size_t input_index);
  Status load_params();
  Result<Flow> load();
  Result<Flow> initialize();
  Result<Flow> check_correctness();
  Result<Flow> run_check_set(size_t set_index, int run);
  // The steps of one check set (a call on the judge's inputs, then the checks of its results).
  Result<void*> check_input_source(size_t set_index, size_t input);
  Status stage_check_inputs(size_t set_index, int run);
  Result<bool> check_inputs_unchanged(size_t set_index, const std::string& label);
  Result<std::vector<uint64_t>> unjoined_output_elements(const std::string& label);
  Status check_determinism(int run);  // set 0: the repeat's outputs against the first run's
  Status copy_to_check_slot(const SlotSet& slots);
  // Copies each buffer to the judge's slot of the same index, on the stream (not synchronized).
  Status copy_to_slots(const std::vector<IpcRef>& slots, const std::vector<GuardedBuffer>& buffers,
                       const std::vector<TensorSpec>& tensors, const char* what);
  Result<Flow> idle_check(const std::string& label, const char* json_key);
  Result<Flow> time_forward();  // timing.cc
  Status measure_empty_sync_gap(int calls);  // timing.cc
  Result<Flow> timed_iteration(int iteration, bool timed, bool spot, int spot_index);
  Result<Flow> recheck(IoSet& timed_set, int iteration);
  Status copy_to_spot_slot(const IoSet& timed_set, int spot_index);

  Result<Flow> call_forward(IoSet& io, const CallOptions& call, CallRecord& record);
  // Kernels on other streams that ended after the caller's stream finished (stream marker).
  void report_unjoined_kernels(const WindowSummary& summary, const std::string& label);
  void inspect_threads(const std::vector<int>& before, const std::string& label);
  void inspect_processes(const std::string& label);

  // Checks after a call; each reads back its counters (synchronizes the stream).
  Result<uint64_t> canary_damage(const IoSet& io);
  Status restore_canaries(const IoSet& io);
  Result<std::vector<uint64_t>> poison_remaining(const IoSet& io, int pattern);
  void report_poison(const std::vector<uint64_t>& remaining, const std::string& label);
  Result<CompareCounts> compare(const void* a, const void* b, const TensorSpec& tensor, double atol,
                                double rtol);
  Result<uint64_t> byte_mismatches(const void* a, const void* b, uint64_t bytes);
  Result<uint64_t> input_checksum(const IoSet& io);
  Status poison_outputs(const IoSet& io, int pattern);
  Status reset_caches(int iteration);

  cudaEvent_t stream_end_event_ = nullptr;
  DeviceCounters counters_;
  LaunchCounter launches_;
  uint32_t runner_stream_id_ = 0;

  std::vector<GuardedBuffer> params_;
  IoSet check_io_;
  std::vector<std::vector<DeviceBuffer>> check_sources_;  // --self-test: [set][input]
  std::vector<DeviceBuffer> fixed_sources_;               // inputs with distribution `fixed`
  std::vector<DeviceBuffer> determinism_copy_;            // outputs of set 0, first run
  std::vector<DeviceBuffer> snapshots_;                   // outputs as the caller's stream saw them
  std::vector<IoSet> timing_sets_;
  IoSet recheck_io_;

  std::vector<int> threads_before_load_;
  std::vector<int> launches_per_forward_;
  TimingLog timing_;
  bool unjoined_reported_ = false;
  int max_threads_after_forward_ = 0;
  uint64_t seccomp_refusals_seen_ = 0;
  std::set<int> reported_threads_;
};

}  // namespace stitch::runner
