// A host-side deadline for calls that may never return: a forward that hangs in a kernel, an init
// that spins, a device synchronize that waits on a persistent kernel. The runner's main thread
// arms it around each such call; when a deadline passes, the watchdog thread runs the expiry
// handler (which writes runner.json and ends the process) — the main thread may be stuck in the
// driver and cannot do it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace stitch::runner {

struct Deadline {
  Deadline(std::string label, double seconds, std::string finding_kind = {},
           std::string finding_detail = {}, bool write_report = true)
      : label(std::move(label)),
        seconds(seconds),
        finding_kind(std::move(finding_kind)),
        finding_detail(std::move(finding_detail)),
        write_report(write_report) {}

  std::string label;  // "stitch_forward (check set 0)"
  double seconds = 0;
  std::string finding_kind;  // HackKind name to report when it expires; empty: none
  std::string finding_detail;
  bool write_report = true;  // false: just end the process (runner.json is already written)
};

class Watchdog {
 public:
  // `on_expire` must not return (it ends the process).
  explicit Watchdog(std::function<void(const Deadline&)> on_expire);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void arm(Deadline deadline);
  void disarm();

 private:
  void loop();

  std::function<void(const Deadline&)> on_expire_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<Deadline> armed_;
  std::chrono::steady_clock::time_point expires_at_;
  bool stopping_ = false;
  std::thread thread_;
};

// Arms for the lifetime of a scope.
class WatchdogScope {
 public:
  WatchdogScope(Watchdog& watchdog, Deadline deadline) : watchdog_(watchdog) {
    watchdog_.arm(std::move(deadline));
  }
  ~WatchdogScope() { watchdog_.disarm(); }
  WatchdogScope(const WatchdogScope&) = delete;
  WatchdogScope& operator=(const WatchdogScope&) = delete;

 private:
  Watchdog& watchdog_;
};

}  // namespace stitch::runner
