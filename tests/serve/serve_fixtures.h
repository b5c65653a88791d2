// Shared pieces of the serve tests: a temporary folder, candidates, waiting for a condition.
#pragma once

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

#include "serve/contracts.h"

namespace stitch::serve::test {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "stitch_serve_XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline Candidate candidate(const std::string& id, const std::string& source = "// ok",
                           double timeout_s = 0) {
  return Candidate{id, "task_a", source, timeout_s};
}

// Polls `done` every 5 ms for up to `seconds`.
inline bool eventually(const std::function<bool()>& done, double seconds = 5) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

}  // namespace stitch::serve::test
