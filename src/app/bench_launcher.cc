// Worker processes of a bench (bench_launcher.h).
#include "app/bench_launcher.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "util/fs.h"

namespace stitch::app {

Status SelfWorkerLauncher::start(int worker_index, int device) {
  const std::string self = (executable_dir() / "stitchcuda").string();
  std::vector<std::string> all = {self,         "bench", "--worker-of", bench_dir_.string(),
                                  "--worker-index", std::to_string(worker_index)};
  all.insert(all.end(), worker_args_.begin(), worker_args_.end());
  const std::string visible = std::to_string(device);
  std::vector<char*> argv;
  for (auto& arg : all)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return make_error(ErrorKind::machine, "starting worker {}: fork failed", worker_index);
  if (pid == 0) {
    ::setenv("CUDA_VISIBLE_DEVICES", visible.c_str(), 1);
    ::execv(self.c_str(), argv.data());
    ::_exit(127);
  }
  children_.push_back(pid);
  return {};
}

void SelfWorkerLauncher::wait_all() {
  for (pid_t child : children_) {
    int status = 0;
    ::waitpid(child, &status, 0);
  }
  children_.clear();
}

}  // namespace stitch::app
