#include "verify/timing_basis.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "verify/verify_report.h"  // timing_stats: the medians the report itself uses

namespace stitch {
namespace {

double median(std::span<const double> values) {
  return timing_stats({values.begin(), values.end()})->median_ms;  // callers ensure non-empty
}

}  // namespace

TimingBasisDecision choose_timing_basis(std::span<const double> stream_ms,
                                        std::span<const double> synced_ms,
                                        std::span<const double> empty_gap_ms) {
  TimingBasisDecision decision;
  if (stream_ms.empty() || stream_ms.size() != synced_ms.size()) {
    decision.detail = "no paired stream/synced times: synced time used";
    return decision;
  }
  if (empty_gap_ms.empty()) {
    decision.detail = "synchronize cost not measured: synced time used";
    return decision;
  }
  std::vector<double> gaps(stream_ms.size());
  for (size_t i = 0; i < gaps.size(); ++i) gaps[i] = synced_ms[i] - stream_ms[i];
  double stream_median = median(stream_ms);
  decision.excess_gap_ms = median(gaps) - median(empty_gap_ms);
  double allowed = std::max(kOffStreamMinMs, kOffStreamFraction * stream_median);
  if (decision.excess_gap_ms > allowed) {
    decision.basis = TimingBasis::synced;
    decision.detail = fmt::format(
        "the device went idle {:.3f} ms (median) after the caller's stream, beyond the "
        "synchronize's own cost (allowed {:.3f} ms): work outside the caller's stream is counted",
        decision.excess_gap_ms, allowed);
  } else {
    decision.basis = TimingBasis::stream;
    decision.detail = "no work outside the caller's stream: caller's-stream time used";
  }
  return decision;
}

}  // namespace stitch
