// The self-contained HTML report of a bench: one file with no external resources (inline CSS,
// charts drawn as inline SVG here, no JavaScript), so it can be mailed, attached to CI runs and
// opened offline. Contents: a header (title, GPUs, tracks, date, counts), the per-level summary,
// speedup per task against each baseline, a time breakdown of the top kernels of each passed task
// that has them, the full per-task table, and the records themselves as a JSON data island that
// tools can read back:
//   <script type="application/json" id="stitch-results">
//     {"format": "stitchcuda.bench_results", "version": 1, "records": [record_to_json(...), ...]}
//   </script>
// ("<", ">" and "&" inside it are written as \u003c, \u003e, \u0026 so no text can end it early).
// Every number shown is a record's number written by the formatters of bench_summary.h.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "bench/bench_results.h"

namespace stitch::bench {

inline constexpr const char* kResultsIslandId = "stitch-results";
inline constexpr const char* kResultsFormat = "stitchcuda.bench_results";

struct HtmlReportOptions {
  std::string title = "StitchCUDA bench";
  std::string generated_at;  // shown in the header, e.g. UTC ISO-8601; omitted when empty
};

std::string render_html_report(const std::vector<BenchRecord>& records,
                               const HtmlReportOptions& options);

// Text for HTML element content and attribute values: & < > " ' escaped.
std::string html_escape(std::string_view text);

}  // namespace stitch::bench
