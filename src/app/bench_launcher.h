// The real WorkerLauncher (bench_scheduler.h): each worker a `stitchcuda bench --worker-of BENCH_DIR`
// process of this same binary, pinned to its GPU with CUDA_VISIBLE_DEVICES. Its own file because
// its fork/exec is due to move onto util/process's one subprocess implementation.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "app/bench_scheduler.h"

namespace stitch::app {

class SelfWorkerLauncher final : public WorkerLauncher {
 public:
  // `worker_args`: what every worker is given besides --worker-of and --worker-index (the loop's
  // options, the deadline).
  SelfWorkerLauncher(std::filesystem::path bench_dir, std::vector<std::string> worker_args)
      : bench_dir_(std::move(bench_dir)), worker_args_(std::move(worker_args)) {}
  Status start(int worker_index, int device) override;
  void wait_all() override;

 private:
  std::filesystem::path bench_dir_;
  std::vector<std::string> worker_args_;
  std::vector<pid_t> children_;
};

}  // namespace stitch::app
