// The process-wide task limits of task_limits.h.
#include "util/task_limits.h"

#include <algorithm>
#include <fstream>
#include <mutex>
#include <string>

namespace stitch {
namespace {

std::mutex& limits_mutex() {
  static std::mutex mutex;
  return mutex;
}

TaskLimits& stored_limits() {
  static TaskLimits limits;
  return limits;
}

}  // namespace

void set_task_limits(const TaskLimits& limits) {
  std::lock_guard<std::mutex> lock(limits_mutex());
  stored_limits() = limits;
}

TaskLimits task_limits() {
  std::lock_guard<std::mutex> lock(limits_mutex());
  return stored_limits();
}

double task_timeout_s(double own_s) {
  const double cap = task_limits().timeout_s;
  if (cap <= 0) return own_s;
  return own_s > 0 ? std::min(own_s, cap) : cap;
}

uint64_t task_memory_bytes() {
  const std::optional<uint64_t> set = task_limits().memory_bytes;
  return set ? *set : default_task_memory_bytes();
}

uint64_t default_task_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  uint64_t kib = 0;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemTotal:") {
      constexpr uint64_t kFloor = uint64_t{8} << 30;
      return std::max(kib * 1024 / 4 * 3, kFloor);
    }
  return 0;
}

}  // namespace stitch
