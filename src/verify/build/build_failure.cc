// Machine failures of a build (build_failure.h).
#include "verify/build/build_failure.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <vector>

namespace stitch {
namespace {

// What the compiler driver, its stages (cicc, ptxas, fatbinary, nvlink), the host compiler and the
// linker print when the machine, not the source, stopped them. Matched without case.
// stitch: table
constexpr std::array<std::string_view, 14> kMachineMessages = {
    "no space left on device",           // ENOSPC: writing an intermediate or the output
    "disk quota exceeded",               // EDQUOT
    "cannot allocate memory",            // ENOMEM: fork/exec of a stage, or mmap
    "virtual memory exhausted",          // gcc's cc1plus
    "out of memory allocating",          // gcc's cc1plus: "out of memory allocating N bytes"
    "memory allocation failure",         // cicc / ptxas
    "too many open files",               // EMFILE / ENFILE
    "read-only file system",             // EROFS
    "input/output error",                // EIO
    "file too large",                    // EFBIG (RLIMIT_FSIZE)
    "died due to signal 9",              // nvcc: "'cicc' died due to signal 9 (Kill signal)", OOM
    "killed signal terminated program",  // gcc: "fatal error: Killed signal terminated program"
    "error writing to",                  // gcc/as: the output could not be written
    "resource temporarily unavailable",  // EAGAIN from fork: the process limit
};

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// "      ^": the caret the front end prints under a quoted source line.
bool caret_line(std::string_view line) {
  const size_t first = line.find_first_not_of(" \t");
  return first != std::string_view::npos && line[first] == '^' &&
         line.find_first_not_of(" \t~^", first) == std::string_view::npos;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

}  // namespace

std::optional<std::string> machine_failure_line(std::string_view log) {
  const std::vector<std::string_view> lines = split_lines(log);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i + 1 < lines.size() && caret_line(lines[i + 1])) continue;  // quoted source
    const std::string text = lower(lines[i]);
    for (std::string_view message : kMachineMessages)
      if (text.find(message) != std::string::npos) {
        std::string_view line = lines[i];
        const size_t first = line.find_first_not_of(" \t");
        return std::string(line.substr(first == std::string_view::npos ? 0 : first, 300));
      }
  }
  return std::nullopt;
}

Status check_machine_build_failure(const BuildResult& result) {
  if (result.ok || result.timed_out) return {};  // a timeout is the build's own limit
  if (auto line = machine_failure_line(result.log))
    return make_error(ErrorKind::machine, "the machine failed the build, not the program: {}",
                      *line);
  if (!result.reproducible)
    return make_error(ErrorKind::machine,
                      "the compiler was killed ({}), not stopped by the program's build",
                      result.failure);
  return {};
}

}  // namespace stitch
