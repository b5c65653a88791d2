// SVG charts of the HTML report; see html_charts.h. Geometry is in SVG user units; the page's CSS
// scales the <svg> to its container through the viewBox.
#include "bench/html_charts.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "bench/bench_summary.h"
#include "bench/html_report.h"

namespace stitch::bench {
namespace {

// Speedup chart layout.
constexpr double kWidth = 1000;
constexpr double kLabelWidth = 290;  // task names, right-aligned against the plot
constexpr double kPlotLeft = kLabelWidth + 10;
constexpr double kPlotRight = kWidth - 80;  // room for the value label of the longest bar
constexpr double kBarHeight = 12;
constexpr double kBarGap = 2;
constexpr double kGroupGap = 10;
constexpr double kTop = 46;            // legend and the 1× label
constexpr double kBottom = 30;         // tick labels
constexpr size_t kMaxLabelChars = 40;  // ~6.7 units a character at 12px
// Speedups outside this range are drawn at its edge (the label still says the real value).
constexpr double kMinAxis = 1e-3, kMaxAxis = 1e3;

constexpr const char* kModeColors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1",
                                       "#76b7b2", "#edc948", "#9c755f", "#e15759"};
constexpr const char* kKernelColors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                         "#edc948", "#b07aa1", "#ff9da7", "#9c755f"};
constexpr const char* kOtherColor = "#bab0ac";

const char* mode_color(size_t index) {
  return kModeColors[index % std::size(kModeColors)];
}

// At most `max_chars` code points, with "…" when cut; never splits a UTF-8 sequence.
std::string truncate(const std::string& text, size_t max_chars) {
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
    if (chars++ == max_chars - 1) {
      size_t rest = 0;
      for (size_t j = i; j < text.size(); ++j)
        rest += (static_cast<unsigned char>(text[j]) & 0xC0) != 0x80;
      return rest <= 1 ? text : text.substr(0, i) + "…";
    }
  }
  return text;
}

// 1-2-5 steps: nice tick values on a log axis.
double nice_at_or_below(double value) {
  double decade = std::pow(10.0, std::floor(std::log10(value)));
  for (double step : {5.0, 2.0, 1.0})
    if (step * decade <= value * (1 + 1e-9)) return step * decade;
  return decade;
}

double nice_at_or_above(double value) {
  double decade = std::pow(10.0, std::floor(std::log10(value)));
  for (double step : {1.0, 2.0, 5.0, 10.0})
    if (step * decade >= value * (1 - 1e-9)) return step * decade;
  return 10 * decade;
}

struct LogAxis {
  double lo = 0.5, hi = 2;
  double x(double value) const {
    value = std::clamp(value, lo, hi);
    return kPlotLeft + (std::log(value) - std::log(lo)) / (std::log(hi) - std::log(lo)) *
                           (kPlotRight - kPlotLeft);
  }
  std::vector<double> ticks() const {
    std::vector<double> all;
    for (double decade = std::pow(10.0, std::floor(std::log10(lo))); decade <= hi * 1.0001;
         decade *= 10)
      for (double step : {1.0, 2.0, 5.0})
        if (step * decade >= lo * 0.9999 && step * decade <= hi * 1.0001)
          all.push_back(step * decade);
    if (all.size() <= 10) return all;
    std::vector<double> decades;  // a wide axis: powers of ten only
    for (double t : all)
      if (std::abs(std::log10(t) - std::round(std::log10(t))) < 1e-9) decades.push_back(t);
    return decades;
  }
};

LogAxis axis_for(const std::vector<BenchRecord>& records, const std::vector<std::string>& modes) {
  double lo = 1, hi = 1;
  for (const auto& record : records)
    for (const auto& mode : modes)
      if (auto s = record.speedup(mode)) lo = std::min(lo, *s), hi = std::max(hi, *s);
  LogAxis axis;
  axis.lo = nice_at_or_below(std::clamp(lo / 1.15, kMinAxis, 0.5));
  axis.hi = nice_at_or_above(std::clamp(hi * 1.15, 2.0, kMaxAxis));
  return axis;
}

std::string svg_text(double x, double y, const std::string& cls, const std::string& anchor,
                     const std::string& text) {
  return fmt::format("<text class=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\">{}</text>",
                     cls, x, y, anchor, html_escape(text));
}

}  // namespace

std::string render_speedup_chart(const std::vector<BenchRecord>& records,
                                 const std::vector<std::string>& modes) {
  LogAxis axis = axis_for(records, modes);
  size_t bars = std::max<size_t>(1, modes.size());
  double group_height = bars * (kBarHeight + kBarGap) - kBarGap;
  double plot_height = records.size() * (group_height + kGroupGap);
  double height = kTop + plot_height + kBottom;
  std::string out = fmt::format(
      "<svg id=\"speedup-chart\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" "
      "viewBox=\"0 0 {:.0f} {:.0f}\" width=\"{:.0f}\" height=\"{:.0f}\" role=\"img\" "
      "aria-label=\"speedup per task against each baseline\">\n",
      kWidth, height, kWidth, height);

  // Legend: one swatch per mode.
  double legend_x = kPlotLeft;
  for (size_t m = 0; m < modes.size(); ++m) {
    out += fmt::format(
        "<rect class=\"legend-swatch\" x=\"{:.1f}\" y=\"3\" width=\"12\" height=\"12\" "
        "fill=\"{}\"/>",
        legend_x, mode_color(m));
    out += svg_text(legend_x + 16, 13, "legend", "start", "vs " + modes[m]) + "\n";
    legend_x += 40 + 7.0 * (modes[m].size() + 3);
  }

  // Grid and ticks, then the reference line at 1× over them.
  double plot_bottom = kTop + plot_height;
  for (double tick : axis.ticks()) {
    double x = axis.x(tick);
    out += fmt::format(
        "<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>", x,
        kTop - 6, plot_bottom);
    out += svg_text(x, plot_bottom + 16, "tick", "middle", fmt::format("{:g}×", tick)) + "\n";
  }
  double one = axis.x(1);
  out += fmt::format(
      "<line class=\"reference-line\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" "
      "y2=\"{2:.1f}\"/>\n",
      one, kTop - 10, plot_bottom);

  for (size_t t = 0; t < records.size(); ++t) {
    const BenchRecord& r = records[t];
    double top = kTop + t * (group_height + kGroupGap) + kGroupGap / 2;
    out += fmt::format("<g class=\"task-group\" data-key=\"{}\" data-outcome=\"{}\">",
                       html_escape(r.key()), bench_outcome_name(r.outcome));
    out += fmt::format("<title>{}</title>", html_escape(r.key()));
    out += svg_text(kLabelWidth, top + group_height / 2 + 4, "task-label", "end",
                    truncate(r.task, kMaxLabelChars));
    bool any_bar = false;
    for (size_t m = 0; m < modes.size(); ++m) {
      std::optional<double> speedup = r.speedup(modes[m]);
      if (!speedup) continue;
      any_bar = true;
      double y = top + m * (kBarHeight + kBarGap);
      double end = axis.x(*speedup);
      double x = std::min(one, end), width = std::max(1.0, std::abs(end - one));
      out += fmt::format(
          "<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.0f}\" "
          "fill=\"{}\"><title>{} vs {}: {} ({} ms against {} ms)</title></rect>",
          x, y, width, kBarHeight, mode_color(m), html_escape(r.task), html_escape(modes[m]),
          format_speedup(speedup), format_ms(r.ours_ms), format_ms(r.baseline_ms(modes[m])));
      // Faster: label past the bar's end; slower: just right of the 1× line, clear of the bar.
      double label_x = (*speedup >= 1 ? std::max(end, one) : one) + 4;
      out += svg_text(label_x, y + kBarHeight - 2, "bar-value", "start", format_speedup(speedup));
    }
    if (!any_bar) {
      std::string label =
          r.passed() ? "passed, no baseline" : std::string(bench_outcome_name(r.outcome));
      out += svg_text(kPlotLeft + 6, top + group_height / 2 + 4, "task-gap", "start", label);
    }
    out += "</g>\n";
  }
  out += svg_text(one, kTop - 14, "reference-label", "middle", "1×");
  out += "</svg>\n";
  return out;
}

std::string render_kernel_breakdown(const BenchRecord& r) {
  if (r.top_kernels.empty()) return "";
  struct Segment {
    std::string name;
    double ms;
    const char* color;
  };
  std::vector<Segment> segments;
  double sum = 0;
  for (size_t k = 0; k < r.top_kernels.size(); ++k) {
    double ms = std::isfinite(r.top_kernels[k].ms) ? std::max(0.0, r.top_kernels[k].ms) : 0;
    segments.push_back({r.top_kernels[k].name, ms, kKernelColors[k % std::size(kKernelColors)]});
    sum += ms;
  }
  if (r.ours_ms && std::isfinite(*r.ours_ms) && *r.ours_ms > sum)
    segments.push_back({"other", *r.ours_ms - sum, kOtherColor});
  double total = std::max(sum, r.ours_ms.value_or(0));
  if (!(total > 0)) total = 1;

  constexpr double kBarWidth = kWidth - 20;
  std::string out = fmt::format(
      "<svg class=\"chart kernel-chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 "
      "{0:.0f} "
      "36\" width=\"{0:.0f}\" height=\"36\" role=\"img\" aria-label=\"time of the top kernels of "
      "{1}\">",
      kWidth, html_escape(r.task));
  double x = 10;
  for (const auto& segment : segments) {
    double width = segment.ms / total * kBarWidth;
    out += fmt::format(
        "<rect class=\"kernel-segment\" x=\"{:.1f}\" y=\"4\" width=\"{:.1f}\" height=\"24\" "
        "fill=\"{}\"><title>{}: {} ms</title></rect>",
        x, width, segment.color, html_escape(segment.name), format_ms(segment.ms));
    if (width > 56)
      out += svg_text(x + width / 2, 21, "segment-value", "middle", format_ms(segment.ms) + " ms");
    x += width;
  }
  out += "</svg>\n<table class=\"kernel-legend\">\n";
  for (const auto& segment : segments)
    out += fmt::format(
        "<tr><td><span class=\"swatch\" style=\"background:{}\"></span></td>"
        "<td class=\"kernel-name\">{}</td><td class=\"num\">{} ms</td></tr>\n",
        segment.color, html_escape(segment.name), format_ms(segment.ms));
  out += "</table>\n";
  return out;
}

}  // namespace stitch::bench
