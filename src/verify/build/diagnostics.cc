// Line-oriented parsers for nvcc toolchain output. Each recognised line shape has one regular
// expression below, with an example of the text it matches taken from tests/verify/data/*.log.
#include "verify/build/diagnostics.h"

#include <cxxabi.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "util/fs.h"
#include "verify/checks/include_policy.h"  // path_inside

namespace stitch {
namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

std::string trim(std::string_view text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return "";
  size_t end = text.find_last_not_of(" \t");
  return std::string(text.substr(begin, end - begin + 1));
}

// "catastrophic error", "fatal error", "fatal" → "error"; remarks are not diagnostics.
std::optional<std::string> normalise_severity(const std::string& severity) {
  if (severity == "warning") return "warning";
  if (severity == "note") return "note";
  if (severity.find("error") != std::string::npos || severity == "fatal") return "error";
  return std::nullopt;
}

// The line shapes of compiler and linker messages, compiled once (std::regex is slow to build).
struct MessagePatterns {
  // broken_program.cu(7): error: identifier "undefined_scale" is undefined
  // warnings_only.cu(8): warning #177-D: variable "unused_value" was declared but never referenced
  std::regex edg_line{
      R"(^(.+?)\((\d+)\): (error|warning|catastrophic error|remark)(?: #[\w-]+)?: (.*)$)"};
  // host_error.cu:10:17: error: call to 'forbidden_helper' declared with attribute error: ...
  // (column optional, as in assembler and some linker messages)
  std::regex gcc_line{
      R"(^([^:\s][^:]*):(\d+):(?:(\d+):)? (fatal error|error|warning|note): (.*)$)"};
  // ptxas error   : Entry function '_Z15too_much_sharedPf' uses too much shared data (...)
  // nvlink error   : Undefined reference to '_Z23undefined_device_helperf' in '/tmp/...o'
  // nvcc fatal   : Unsupported gpu architecture 'sm_1'
  std::regex tool_line{R"(^(ptxas|nvlink|nvcc|fatbinary)\s+(error|warning|fatal)\s*: (.*)$)"};
  // /usr/bin/ld: cannot find -lstitch_no_such_library: No such file or directory
  std::regex ld_line{R"(^(?:\S*/)?ld(?:\.\w+)?: (.*)$)"};
  // tmpxft_..._cudafe1.cpp:(.text+0x1d): undefined reference to `undefined_host_helper(float)'
  std::regex undefined_reference_line{
      R"(^.*:\(\.[\w.]+\+0x[0-9a-f]+\): (undefined reference to .*)$)"};
};

const MessagePatterns& message_patterns() {
  static const MessagePatterns patterns;
  return patterns;
}

class SnippetCache {
 public:
  SnippetCache(const std::filesystem::path& source_dir, int context_lines)
      : source_dir_(source_dir), context_lines_(context_lines) {}

  std::string snippet(const std::string& file, int line) {
    if (file.empty() || line <= 0) return "";
    std::filesystem::path path = file;
    if (path.is_relative() && !source_dir_.empty()) path = source_dir_ / path;
    return read_snippet(path, line, context_lines_);
  }

 private:
  std::filesystem::path source_dir_;
  int context_lines_;
};

}  // namespace

std::string read_snippet(const std::filesystem::path& file, int line, int context_lines) {
  auto contents = read_file(file);
  if (!contents.ok() || line <= 0) return "";
  std::vector<std::string_view> lines = split_lines(*contents);
  if (static_cast<size_t>(line) > lines.size()) return "";
  int first = std::max(1, line - context_lines);
  int last = std::min(static_cast<int>(lines.size()), line + context_lines);
  int width = static_cast<int>(std::to_string(last).size());
  std::string out;
  for (int i = first; i <= last; ++i)
    out += fmt::format("{}{:>{}} | {}\n", i == line ? '>' : ' ', i, width, lines[i - 1]);
  return out;
}

std::string demangle_symbol(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || !demangled) return mangled;
  return demangled.get();
}

std::vector<Diagnostic> parse_diagnostics(std::string_view log,
                                          const std::filesystem::path& source_dir,
                                          int context_lines) {
  SnippetCache snippets(source_dir, context_lines);
  std::vector<Diagnostic> diagnostics;
  std::set<std::tuple<std::string, int, std::string, std::string>> seen;
  bool in_edg_block = false;  // inside the echo/caret lines that follow an EDG message

  auto add = [&](std::string file, int line, const std::string& severity, std::string message) {
    if (severity == "note") {
      if (!diagnostics.empty()) diagnostics.back().message += "; note: " + message;
      return;
    }
    auto key = std::make_tuple(file, line, severity, message);
    if (!seen.insert(key).second) return;
    Diagnostic d;
    d.snippet = snippets.snippet(file, line);
    d.file = std::move(file);
    d.line = line;
    d.severity = severity;
    d.message = std::move(message);
    diagnostics.push_back(std::move(d));
  };

  std::smatch m;
  for (std::string_view view : split_lines(log)) {
    std::string text(view);
    if (text.empty()) {
      in_edg_block = false;
      continue;
    }
    if (std::regex_match(text, m, message_patterns().edg_line)) {
      in_edg_block = true;
      auto severity = normalise_severity(m[3]);
      if (severity) add(m[1], std::stoi(m[2]), *severity, m[4]);
      continue;
    }
    if (in_edg_block && (text[0] == ' ' || text[0] == '\t')) {
      // EDG follows a message with the indented source line, a caret line and, for templates, the
      // instantiation context; keep the context, our own snippet replaces the echo.
      std::string trimmed = trim(text);
      if (trimmed.rfind("detected during", 0) == 0 || trimmed.rfind("instantiation of", 0) == 0)
        if (!diagnostics.empty()) diagnostics.back().message += "; " + trimmed;
      continue;
    }
    in_edg_block = false;
    if (std::regex_match(text, m, message_patterns().tool_line)) {
      auto severity = normalise_severity(m[2]);
      if (severity) add("", 0, *severity, std::string(m[1]) + ": " + std::string(m[3]));
      continue;
    }
    if (std::regex_match(text, m, message_patterns().undefined_reference_line)) {
      add("", 0, "error", "ld: " + std::string(m[1]));
      continue;
    }
    if (std::regex_match(text, m, message_patterns().gcc_line)) {
      auto severity = normalise_severity(m[4]);
      if (severity) add(m[1], std::stoi(m[2]), *severity, m[5]);
      continue;
    }
    if (std::regex_match(text, m, message_patterns().ld_line)) {
      std::string message = m[1];
      // "/usr/bin/ld: /tmp/x.o: in function `main':" introduces the undefined-reference line.
      if (message.find(": in function ") != std::string::npos) continue;
      bool warning = message.rfind("warning:", 0) == 0;
      add("", 0, warning ? "warning" : "error", "ld: " + message);
      continue;
    }
    // collect2's "ld returned 1 exit status" and EDG's "N errors detected in the compilation of"
    // only summarise what was already recorded; they matter when nothing else was.
    if (text.rfind("collect2: error:", 0) == 0) {
      bool have_error = false;
      for (const Diagnostic& d : diagnostics)
        have_error = have_error || d.severity == "error";
      if (!have_error) add("", 0, "error", text);
    }
  }
  return diagnostics;
}

namespace {

constexpr std::string_view kWithheld = "(text withheld: the file is outside the program's sources)";

bool quotable(const std::string& file, const std::filesystem::path& source_dir,
              const std::vector<std::filesystem::path>& quotable_dirs) {
  std::filesystem::path path = file;
  if (path.is_relative() && !source_dir.empty()) path = source_dir / path;
  std::vector<std::filesystem::path> dirs;
  for (const auto& dir : quotable_dirs) {
    std::error_code ec;
    if (!dir.empty()) dirs.push_back(std::filesystem::weakly_canonical(dir, ec));
  }
  return path_inside(path, dirs);
}

}  // namespace

void withhold_foreign_text(std::vector<Diagnostic>& diagnostics,
                           const std::filesystem::path& source_dir,
                           const std::vector<std::filesystem::path>& quotable_dirs) {
  for (Diagnostic& d : diagnostics) {
    if (d.file.empty() || quotable(d.file, source_dir, quotable_dirs)) continue;
    d.message = std::string(kWithheld);
    d.snippet.clear();
  }
}

std::string withhold_foreign_log_text(std::string_view log, const std::filesystem::path& source_dir,
                                      const std::vector<std::filesystem::path>& quotable_dirs) {
  std::string out;
  bool dropping = false;  // inside the echo of a withheld message
  std::smatch m;
  for (std::string_view view : split_lines(log)) {
    std::string text(view);
    if (dropping && !text.empty() && (text[0] == ' ' || text[0] == '\t')) continue;
    dropping = false;
    std::string file, line, severity;
    if (std::regex_match(text, m, message_patterns().edg_line)) {
      std::tie(file, line, severity) = std::make_tuple(m[1].str(), m[2].str(), m[3].str());
    } else if (std::regex_match(text, m, message_patterns().gcc_line)) {
      std::tie(file, line, severity) = std::make_tuple(m[1].str(), m[2].str(), m[4].str());
    }
    if (!file.empty() && !quotable(file, source_dir, quotable_dirs)) {
      out += fmt::format("{}:{}: {} {}\n", file, line, severity, kWithheld);
      dropping = true;
      continue;
    }
    out += text;
    out += '\n';
  }
  return out;
}

namespace {

// The lines of a `ptxas info` (-Xptxas -v) report, compiled once.
struct PtxasPatterns {
  // ptxas info    : Compiling entry function '_Z14tile_transposePKfPfi' for 'sm_90'
  std::regex entry{R"(^ptxas info\s*: Compiling entry function '([^']+)' for '(\w+)')"};
  // ptxas info    : Function properties for _Z14tile_transposePKfPfi
  std::regex properties{R"(^ptxas info\s*: Function properties for (\S+))"};
  //     1544 bytes stack frame, 1888 bytes spill stores, 3020 bytes spill loads
  std::regex stack{
      R"(^\s*(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)"};
  // ptxas info    : Used 14 registers, used 1 barriers, 4224 bytes smem, 372 bytes cmem[0]
  std::regex used{R"(^ptxas info\s*: Used (\d+) registers(.*)$)"};
  // ptxas info    : Compile time = 1.383 ms
  std::regex time{R"(^ptxas info\s*: Compile time = ([\d.]+) ms)"};
};

const PtxasPatterns& ptxas_patterns() {
  static const PtxasPatterns patterns;
  return patterns;
}

// One item of the comma-separated tail of a "Used" line: "used 1 barriers", "4224 bytes smem",
// "372 bytes cmem[0]", "1552 bytes cumulative stack size".
void apply_usage_item(const std::string& item, PtxasKernelReport& report) {
  static const std::regex barriers(R"(used (\d+) barriers?)");
  static const std::regex smem(R"((\d+) bytes smem)");
  static const std::regex cmem(R"((\d+) bytes cmem\[\d+\])");
  std::smatch m;
  if (std::regex_search(item, m, barriers))
    report.barriers = std::stoi(m[1]);
  else if (std::regex_search(item, m, smem))
    report.shared_bytes = std::stoll(m[1]);
  else if (std::regex_search(item, m, cmem))
    report.constant_bytes += std::stoll(m[1]);
}

}  // namespace

std::vector<PtxasKernelReport> parse_ptxas_report(std::string_view log) {
  std::vector<PtxasKernelReport> reports;
  // The kernel the following "Function properties" / "Used" lines describe; -1 after a function
  // that is not an entry (a noinline device function reports properties too).
  int current = -1;
  std::smatch m;
  for (std::string_view view : split_lines(log)) {
    std::string text(view);
    if (std::regex_search(text, m, ptxas_patterns().entry)) {
      PtxasKernelReport report;
      report.mangled_name = m[1];
      report.name = demangle_symbol(report.mangled_name);
      report.arch = m[2];
      reports.push_back(std::move(report));
      current = static_cast<int>(reports.size()) - 1;
    } else if (std::regex_search(text, m, ptxas_patterns().properties)) {
      // The entry compiled last under that name (this target's); -1 for a non-entry function.
      current = -1;
      for (int i = static_cast<int>(reports.size()) - 1; i >= 0 && current < 0; --i)
        if (reports[i].mangled_name == m[1].str()) current = i;
    } else if (current >= 0 && std::regex_search(text, m, ptxas_patterns().stack)) {
      reports[current].stack_frame_bytes = std::stoll(m[1]);
      reports[current].spill_store_bytes = std::stoll(m[2]);
      reports[current].spill_load_bytes = std::stoll(m[3]);
    } else if (current >= 0 && std::regex_search(text, m, ptxas_patterns().used)) {
      reports[current].registers = std::stoi(m[1]);
      std::stringstream rest(m[2].str());
      std::string item;
      while (std::getline(rest, item, ','))
        apply_usage_item(item, reports[current]);
    } else if (current >= 0 && std::regex_search(text, m, ptxas_patterns().time)) {
      reports[current].ptxas_ms = std::stod(m[1]);
    }
  }
  return reports;
}

}  // namespace stitch
