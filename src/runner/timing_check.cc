// The supervisor's timing cross-check; see timing_check.h.
#include "runner/timing_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace stitch::runner {
namespace {

double sum(const std::vector<double>& values) {
  return std::accumulate(values.begin(), values.end(), 0.0);
}

// The first call whose reported `what` exceeds the supervisor's interval, as a violation line.
std::string first_overlong(const char* what, const std::vector<double>& reported,
                           const CallIntervals& seen, const TimingCheckLimits& limits) {
  for (size_t i = 0; i < reported.size() && i < seen.ms.size(); ++i) {
    double allowed = seen.ms[i] * (1 + limits.relative_slack) + limits.absolute_slack_ms;
    if (reported[i] > allowed)
      return fmt::format(
          "timed call {}: {} {:.4f} ms, but the supervisor saw the call take "
          "{:.4f} ms",
          seen.iterations[i], what, reported[i], seen.ms[i]);
  }
  return "";
}

// Per call: the channel's allowance, the larger of `slack_ms` (from the median probe) and
// probe_factor times the probe just before that call, when every call has one (a load that comes
// and goes raises both a call's gap and its own probe's).
std::vector<double> per_call_slack(const CallIntervals& seen, const CallIntervals& probes,
                                   double slack_ms, const TimingCheckLimits& limits) {
  std::vector<double> slack(seen.ms.size(), slack_ms);
  if (!probes.problem.empty() || probes.ms.size() != seen.ms.size()) return slack;
  for (size_t i = 0; i < slack.size(); ++i)
    slack[i] = std::max(slack_ms, limits.probe_factor * probes.ms[i]);
  return slack;
}

// Σ interval ≤ factor × Σ reported + Σ slack, over every call but the `outlier_share` whose
// interval exceeds its allowance most (a burst of load on the host; leaving them out can only
// hide a forgery of so few calls that the median the timing basis uses barely moves).
std::string underreported(const char* what, const std::vector<double>& reported,
                          const CallIntervals& seen, const std::vector<double>& slack,
                          const TimingCheckLimits& limits) {
  const size_t n = seen.ms.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  auto excess = [&](size_t i) {
    return seen.ms[i] - limits.underreport_factor * reported[i] - slack[i];
  };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return excess(a) > excess(b); });
  const size_t left_out = static_cast<size_t>(static_cast<double>(n) * limits.outlier_share);
  double claimed = 0, measured = 0, allowed = 0;
  for (size_t k = left_out; k < n; ++k) {
    const size_t i = order[k];
    claimed += reported[i], measured += seen.ms[i];
    allowed += limits.underreport_factor * reported[i] + slack[i];
  }
  if (measured <= allowed) return "";
  return fmt::format(
      "{} sums to {:.3f} ms over {} timed calls, but the supervisor measured "
      "{:.3f} ms between their marks ({:.1f}x; {:.3f} ms a call allowed for the channel{})",
      what, claimed, n - left_out, measured, claimed > 0 ? measured / claimed : 0.0,
      (allowed - limits.underreport_factor * claimed) / static_cast<double>(n - left_out),
      left_out > 0 ? fmt::format("; the {} calls furthest over left out", left_out) : "");
}

}  // namespace

double underreport_slack_ms(const TimingCheckLimits& limits, const CallIntervals& probes) {
  if (probes.ms.empty() || !probes.problem.empty()) return limits.underreport_slack_ms;
  std::vector<double> sorted = probes.ms;
  auto middle = sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2);
  std::nth_element(sorted.begin(), middle, sorted.end());
  return std::max(limits.underreport_slack_ms, limits.probe_factor * *middle);
}

CallIntervals call_intervals(const std::vector<TimedMark>& marks, MarkKind begin, MarkKind end) {
  CallIntervals seen;
  const TimedMark* open = nullptr;
  for (const TimedMark& entry : marks) {
    if (entry.mark.kind == begin) {
      if (open && seen.problem.empty())
        seen.problem = fmt::format("call {} began before call {} ended", entry.mark.iteration,
                                   open->mark.iteration);
      open = &entry;
    } else if (entry.mark.kind == end) {
      if (!open || open->mark.iteration != entry.mark.iteration) {
        if (seen.problem.empty())
          seen.problem = fmt::format("call {} ended without beginning", entry.mark.iteration);
        open = nullptr;
        continue;
      }
      seen.iterations.push_back(entry.mark.iteration);
      seen.ms.push_back(entry.at_ms - open->at_ms);
      open = nullptr;
    }
  }
  if (open && seen.problem.empty())
    seen.problem = fmt::format("call {} never ended", open->mark.iteration);
  return seen;
}

std::vector<std::string> cross_check_timing(const CallIntervals& seen,
                                            const ReportedTimes& reported,
                                            const TimingCheckLimits& limits,
                                            const CallIntervals& probes) {
  std::vector<std::string> violations;
  if (!seen.problem.empty()) violations.push_back("timing marks: " + seen.problem);
  size_t n = seen.ms.size();
  if (reported.gpu_ms.size() != n || reported.synced_ms.size() != n ||
      reported.wall_ms.size() != n) {
    violations.push_back(fmt::format(
        "the report has {} timed calls (gpu_ms; {} synced_ms, {} wall_ms), the supervisor saw {}",
        reported.gpu_ms.size(), reported.synced_ms.size(), reported.wall_ms.size(), n));
    return violations;
  }
  for (size_t i = 0; i < n; ++i)
    if (seen.iterations[i] != static_cast<int>(i)) {
      violations.push_back(
          fmt::format("timed call {} was marked as call {}", i, seen.iterations[i]));
      return violations;
    }
  for (const auto& [what, values] :
       {std::pair<const char*, const std::vector<double>*>{"gpu_ms", &reported.gpu_ms},
        {"synced_ms", &reported.synced_ms},
        {"wall_ms", &reported.wall_ms}})
    if (std::string line = first_overlong(what, *values, seen, limits); !line.empty())
      violations.push_back(std::move(line));
  const std::vector<double> slack =
      per_call_slack(seen, probes, underreport_slack_ms(limits, probes), limits);
  for (const auto& [what, values] :
       {std::pair<const char*, const std::vector<double>*>{"wall_ms", &reported.wall_ms},
        {"synced_ms", &reported.synced_ms}})
    if (std::string line = underreported(what, *values, seen, slack, limits); !line.empty())
      violations.push_back(std::move(line));
  return violations;
}

}  // namespace stitch::runner
