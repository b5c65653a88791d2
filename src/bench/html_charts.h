// The report's charts as inline SVG (internal to src/bench/; the page around them is
// html_report.cc). Drawn in C++ so the report needs no JavaScript and shows the same numbers as the
// tables, written by the same formatters.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_results.h"

namespace stitch::bench {

// Grouped horizontal bars, one group (<g class="task-group">) per record and one bar per mode,
// drawn from the 1× reference line on a log axis; a task that did not pass (or has no baseline)
// is a gap labelled with its outcome.
std::string render_speedup_chart(const std::vector<BenchRecord>& records,
                                 const std::vector<std::string>& modes);

// One stacked horizontal bar of the record's top kernels (plus "other": ours_ms minus their sum
// when positive) and a legend with each name and time. Empty when the record has no kernels.
std::string render_kernel_breakdown(const BenchRecord& record);

}  // namespace stitch::bench
