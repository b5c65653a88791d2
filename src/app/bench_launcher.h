// The real WorkerLauncher (bench_scheduler.h): each worker a `stitchcuda bench --worker-of BENCH_DIR`
// process of this same binary, pinned to its GPU with CUDA_VISIBLE_DEVICES, started through
// util/child_process.h (its own process group, which dies with the orchestrator).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "app/bench_scheduler.h"
#include "util/child_process.h"

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
  std::vector<ChildProcess> children_;
};

}  // namespace stitch::app
