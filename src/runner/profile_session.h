// `stitch-runner --profile OUT.json`: instead of the verification phases, load the program, warm
// it up, and trace ONE forward with CUPTI (kernels, copies, memsets), then one more forward with
// runtime/driver API tracing for launch overhead (each traced window first runs one forward whose
// records are dropped: CUPTI's set-up lands there). Writes the timeline (format in
// profile_timeline.h) and runner.json (status, message). Runs inside the same sandbox as a
// verification; it checks nothing about correctness — profiles are measurements, not verdicts.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "runner/device_memory.h"
#include "runner/options.h"
#include "runner/profile_trace.h"
#include "runner/program_session.h"
#include "runner/report.h"
#include "runner/spec.h"
#include "runner/watchdog.h"

namespace stitch::runner {

class ProfileSession : public ProgramSession {
 public:
  ProfileSession(const RunnerOptions& options, RunSpec spec, ReportBuilder& report,
                 Watchdog& watchdog);

  // Runs the profile and writes options.profile; the outcome is in the report. Returns the exit
  // code (the same codes as a verification run).
  int run();

 private:
  struct ForwardTimes {
    double event_ms = 0;
    double wall_ms = 0;
    uint64_t begin_ns = 0;     // CUPTI clock when tracing is available: before the call,
    uint64_t returned_ns = 0;  // when stitch_forward returned,
    uint64_t end_ns = 0;       // after the device synchronize
  };

  Result<Flow> setup_device();
  Status prepare_buffers();
  Result<Flow> load_and_init();
  Result<Flow> forward(const std::string& label, ForwardTimes& times);
  Status flush_l2();
  Result<Flow> profile_forwards();

  ActivityTracer tracer_;
  std::vector<DeviceBuffer> params_, inputs_, outputs_;
  std::vector<stitch_tensor> input_views_, output_views_;
  nlohmann::json profile_;  // the document written to options_.profile
};

}  // namespace stitch::runner
