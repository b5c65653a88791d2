// Worker processes of a bench (bench_launcher.h).
#include "app/bench_launcher.h"

#include "util/fs.h"

namespace stitch::app {

Status SelfWorkerLauncher::start(int worker_index, int device) {
  ChildSpec spec;  // stdout and stderr stay ours: the workers' progress lines reach the terminal
  spec.argv = {(executable_dir() / "stitchcuda").string(), "bench", "--worker-of",
               bench_dir_.string(), "--worker-index", std::to_string(worker_index)};
  spec.argv.insert(spec.argv.end(), worker_args_.begin(), worker_args_.end());
  spec.env["CUDA_VISIBLE_DEVICES"] = std::to_string(device);
  auto child = ChildProcess::start(spec);
  if (!child.ok())
    return child.error().with_context(fmt::format("starting worker {}", worker_index));
  children_.push_back(std::move(*child));
  return {};
}

void SelfWorkerLauncher::wait_all() {
  for (ChildProcess& child : children_) child.wait();
  children_.clear();
}

}  // namespace stitch::app
