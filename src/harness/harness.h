// The bridge to the Python harness (python/stitch_harness), which owns everything PyTorch: capture,
// reference outputs and baseline timings. The C++ side talks to it only through processes and files
// in the run directory (DESIGN.md §4). TorchHarness is the interface; tests use a fake.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "util/enum_names.h"
#include "util/process.h"
#include "util/result.h"

namespace stitch::harness {

namespace fs = std::filesystem;

// Where the harness lives and which interpreter runs it.
struct HarnessLocation {
  std::string python;     // interpreter with torch installed
  fs::path python_dir;    // directory holding the stitch_harness package
};

// Resolution order: $STITCH_PYTHON, <home>/.venv/bin/python, python3 on PATH, where <home> is
// $STITCH_HOME, else the first of <exe>/.., <exe>/../.., the configured source dir that has
// python/stitch_harness.
Result<HarnessLocation> locate_harness();

struct CaptureRequest {
  fs::path task_file;
  fs::path out_dir;
  bool inference = false;
  int seed = 42;
  bool reference = true;
  double timeout_s = 900;
};

// Why a capture failed: python/stitch_harness/errors.py's Category (capture.json's `category`),
// and ir_rejected, a graph.json the IR does not load (app/capture.cc). `none` (written "") for a
// capture that did not fail.
enum class CaptureCategory : uint8_t {
  none,
  not_a_task,  // no Model / get_inputs / get_init_inputs: bad input, not a failure of the work
  load_failed,
  construct_failed,
  inputs_failed,
  export_failed,
  decompose_failed,
  reference_failed,
  ill_conditioned,  // the model's FP32 result is off its FP64 one by more than 5e-3 (and its graph
                    // disagrees with it in FP32): no FP32 program can be judged fairly
                    // (docs/verify-protocol.md, "Capturing an ill-conditioned model")
  timeout,
  internal,  // the harness itself (or a category this build does not know)
  ir_rejected,
};
inline constexpr std::array<std::string_view, 12> kCaptureCategoryNames = {"",
                                                                           "not_a_task",
                                                                           "load_failed",
                                                                           "construct_failed",
                                                                           "inputs_failed",
                                                                           "export_failed",
                                                                           "decompose_failed",
                                                                           "reference_failed",
                                                                           "ill_conditioned",
                                                                           "timeout",
                                                                           "internal",
                                                                           "ir_rejected"};
static_assert(kCaptureCategoryNames.size() ==
              static_cast<size_t>(CaptureCategory::ir_rejected) + 1);
constexpr std::string_view capture_category_name(CaptureCategory category) {
  return enum_name(kCaptureCategoryNames, category);
}
// The category named `name`; a name this build does not know is `internal`.
constexpr CaptureCategory capture_category_from_name(std::string_view name) {
  return enum_from_name<CaptureCategory>(kCaptureCategoryNames, name)
      .value_or(CaptureCategory::internal);
}

// What a capture produced; failures are data (category + one-line message), not errors.
struct CaptureOutcome {
  std::string task;        // stem of the task file
  fs::path task_file;
  fs::path dir;            // where graph.json etc. are (or the failure details)
  bool captured = false;
  CaptureCategory category = CaptureCategory::none;  // when failed: why
  std::string message;     // when failed: one line
  double seconds = 0;
  int nodes = 0;
};

class TorchHarness {
 public:
  virtual ~TorchHarness() = default;
  virtual CaptureOutcome capture(const CaptureRequest& request) = 0;
  // Captures many tasks into out_dir/<stem>/; `on_done` is called as each one finishes.
  virtual std::vector<CaptureOutcome> capture_batch(
      const std::vector<fs::path>& task_files, const fs::path& out_dir, int jobs,
      double timeout_per_task_s, const std::function<void(const CaptureOutcome&)>& on_done) = 0;
};

class PythonHarness final : public TorchHarness {
 public:
  PythonHarness(HarnessLocation location, ProcessRunner& runner)
      : location_(std::move(location)), runner_(runner) {}

  CaptureOutcome capture(const CaptureRequest& request) override;
  std::vector<CaptureOutcome> capture_batch(
      const std::vector<fs::path>& task_files, const fs::path& out_dir, int jobs,
      double timeout_per_task_s, const std::function<void(const CaptureOutcome&)>& on_done) override;

  // The command line prefix `python -m stitch_harness` with the environment it needs.
  ProcessSpec module_command(const std::vector<std::string>& args) const;

 private:
  HarnessLocation location_;
  ProcessRunner& runner_;
};

}  // namespace stitch::harness
