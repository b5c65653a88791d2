// The watchdog thread; see watchdog.h.
#include "runner/watchdog.h"

namespace stitch::runner {

Watchdog::Watchdog(std::function<void(const Deadline&)> on_expire)
    : on_expire_(std::move(on_expire)), thread_([this] { loop(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Watchdog::arm(Deadline deadline) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    expires_at_ = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(deadline.seconds));
    armed_ = std::move(deadline);
  }
  wake_.notify_all();
}

void Watchdog::disarm() {
  std::lock_guard<std::mutex> lock(mutex_);
  armed_.reset();
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (!armed_) {
      wake_.wait(lock);
      continue;
    }
    if (wake_.wait_until(lock, expires_at_) == std::cv_status::timeout && armed_ &&
        std::chrono::steady_clock::now() >= expires_at_) {
      Deadline expired = *armed_;
      lock.unlock();
      on_expire_(expired);  // does not return
      lock.lock();
    }
  }
}

}  // namespace stitch::runner
