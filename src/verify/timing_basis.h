// Which per-iteration time a timing run reports (DESIGN.md §6; docs/verify-protocol.md "Timing").
//
// Every timed iteration records two CUDA-event times from the same start event: `stream` ends at an
// event recorded on the caller's stream right after the forward, `synced` at an event recorded after
// cudaDeviceSynchronize. The synchronize costs a fixed host round trip (about 10-15 us on an H200),
// measured on calls that launch nothing (`empty_gap`). When the device goes idle no later than the
// caller's stream, beyond that fixed cost, the stream time is the honest one and is reported. When
// it goes idle measurably later, work ran outside the caller's stream and the synced time — which
// counts it — is reported instead. The judge's baselines (python/stitch_harness/timing.py) apply the
// same rule with the same thresholds. The thresholds are loose on purpose: a host that waited in
// the synchronize wakes up later than one that did not (the empty-call gap underestimates that), and
// unjoined work is caught precisely elsewhere (the runner's CUPTI stream marker); this rule only
// keeps the reported time honest when work escapes the caller's stream.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "util/enum_names.h"

namespace stitch {

enum class TimingBasis : uint8_t { stream, synced };
inline constexpr std::array<std::string_view, 2> kTimingBasisNames = {"stream", "synced"};
constexpr const auto& enum_names(TimingBasis) { return kTimingBasisNames; }
static_assert(names_every_enumerator(TimingBasis::synced));

struct TimingBasisDecision {
  TimingBasis basis = TimingBasis::synced;
  double excess_gap_ms = 0;  // median(synced - stream) - median(empty_gap)
  std::string detail;        // why, in one line
};

// Work counts as off-stream when the excess exceeds max(kOffStreamMinMs, kOffStreamFraction x the
// median stream time). Without empty-gap samples (an older runner) the synced time is used.
inline constexpr double kOffStreamMinMs = 0.010;
inline constexpr double kOffStreamFraction = 0.10;

TimingBasisDecision choose_timing_basis(std::span<const double> stream_ms,
                                        std::span<const double> synced_ms,
                                        std::span<const double> empty_gap_ms);

}  // namespace stitch
