// Counts the kernels each forward launches and records their names and streams (HACKS.md rows 16,
// 22, 25), through CUPTI's activity API (cupti_activity.h loads it with dlopen, so the runner works
// where it is missing; then `available()` is false and `detail()` says why).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace stitch::runner {

class CuptiActivity;

struct KernelRecord {
  uint64_t start_ns = 0;  // CUPTI timestamps, comparable with LaunchCounter::now()
  uint64_t end_ns = 0;
  uint32_t stream_id = 0;
  std::string name;
};

struct WindowSummary {
  int launches = 0;  // the runner's stream marker excluded
  std::set<uint32_t> streams;
  uint64_t first_start_ns = 0;
  uint64_t last_end_ns = 0;
  uint64_t marker_start_ns = 0;  // start of the runner's stream marker (0: none in the window)
  std::vector<KernelRecord> kernels;  // the program's kernels in the window
};

class LaunchCounter {
 public:
  LaunchCounter();
  ~LaunchCounter();
  LaunchCounter(const LaunchCounter&) = delete;
  LaunchCounter& operator=(const LaunchCounter&) = delete;

  // Loads CUPTI and enables kernel activity records. Call after the CUDA context exists.
  bool start();
  bool available() const { return available_; }
  const std::string& detail() const { return detail_; }

  // Turns recording off or on (timed iterations run without it: CUPTI adds launch overhead that
  // the baselines do not pay).
  void set_enabled(bool enabled);
  bool enabled() const { return enabled_; }

  uint64_t now() const;  // CUPTI's clock, 0 when unavailable
  // Flushes CUPTI's buffers (after a device synchronize) and returns the kernels that started in
  // [begin_ns, end_ns], removing every record up to end_ns from the pending list.
  WindowSummary collect(uint64_t begin_ns, uint64_t end_ns);

  // Every distinct kernel name seen in any collected window, with its launch count.
  const std::map<std::string, int>& kernel_names() const { return names_; }
  void clear_kernel_names() { names_.clear(); }  // after the runner's own warm-up

 private:
  bool available_ = false;
  bool enabled_ = false;
  std::string detail_ = "not started";
  std::unique_ptr<CuptiActivity> cupti_;
  std::map<std::string, int> names_;
};

}  // namespace stitch::runner
