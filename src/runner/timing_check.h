// The supervisor's cross-check of the worker's reported times (docs/verify-protocol.md "Timing
// cross-check"). The worker marks each timed call over the channel (channel.h): `call_begin`
// acknowledged before the call starts, `call_end` after its device synchronize, so each interval
// the supervisor measures with its own clock contains the call. From that:
//   - no reported time of a call (gpu_ms, synced_ms, wall_ms) may exceed the supervisor's
//     interval for it (plus a small slack for the two clocks);
//   - the worker's wall_ms and synced_ms, summed, may not fall short of what the supervisor
//     measured by more than `underreport_factor` times plus a slack per call for the honest gaps
//     (the two messages, a wake-up of the supervisor): `underreport_slack_ms`, or more on a loaded
//     machine, where those gaps grow — `probe_factor` times the median of the probe intervals, the
//     same two messages around no work that the runner's loop sends before each timed call, or
//     times the call's own probe where that is larger (on the H200 machine, with eight
//     verifications and their builds sharing 16 cores, honest calls measured 2.5x their reported
//     sum, 3.4 ms a call more; with twelve, 12.8x, 0.7 ms a call more). The `outlier_share` of
//     calls furthest over their allowance stays out of the sums: a burst of load on the host;
//   - the reported calls and the marked calls must agree in number and order.
// What it catches: a candidate that changes the numbers while the runner's own code still runs its
// loop — a patched timing array, an interposed cudaEventElapsedTime or clock, events recorded
// early — since the marks come from the runner's code around the real call. What it cannot catch:
// a candidate that takes over the worker's control flow entirely can send the marks itself, around
// nothing, and report whatever fits them; only isolation (the sandbox layers) and the judge's
// comparison of the spot-checked outputs stand against that. gpu_ms has no lower bound (work on
// side streams legitimately makes it small; the timing basis, verify/timing_basis.h, then uses
// synced_ms, which has one).
#pragma once

#include <string>
#include <vector>

#include "runner/channel.h"

namespace stitch::runner {

struct TimingCheckLimits {
  double relative_slack = 0.02;  // reported ≤ interval × (1 + this) + absolute_slack_ms
  double absolute_slack_ms = 0.05;
  double underreport_factor = 2.0;  // Σ interval ≤ factor × Σ reported + n × slack
  double underreport_slack_ms = 0.5;
  double probe_factor = 2.0;  // per-call slack ≥ this × the median probe interval, and ≥ this ×
                              // the call's own probe
  double outlier_share = 0.1;  // calls furthest over their allowance left out of the sums
};

// The timed calls as the supervisor saw them: call_begin / call_end pairs, in order.
struct CallIntervals {
  std::vector<int> iterations;
  std::vector<double> ms;
  std::string problem;  // marks out of order or unmatched; empty when fine
};

struct TimedMark {
  Mark mark;
  double at_ms = 0;  // supervisor's CLOCK_MONOTONIC
};

// The intervals between `begin` and `end` marks (by default the timed calls; probe_begin /
// probe_end for the probes).
CallIntervals call_intervals(const std::vector<TimedMark>& marks,
                             MarkKind begin = MarkKind::call_begin,
                             MarkKind end = MarkKind::call_end);

struct ReportedTimes {
  std::vector<double> gpu_ms, synced_ms, wall_ms;
};

// The per-call slack of the underreport check: underreport_slack_ms, or probe_factor times the
// median probe interval when that is larger.
double underreport_slack_ms(const TimingCheckLimits& limits, const CallIntervals& probes);

// Every violation, one line each; empty when the reported times are possible. `probes`: the
// probe intervals (none: the fixed slack alone).
std::vector<std::string> cross_check_timing(const CallIntervals& seen,
                                            const ReportedTimes& reported,
                                            const TimingCheckLimits& limits = {},
                                            const CallIntervals& probes = {});

}  // namespace stitch::runner
