// ChildProcess: exit checks without reaping, the group kill before the reap, stop with grace; see
// child_process.h.
#include "util/child_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "util/child_groups.h"

namespace stitch {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string ProcessResult::describe() const {
  if (timed_out) return fmt::format("timed out after {:.1f} s", wall_s);
  if (term_signal != 0) {
    const char* name = sigabbrev_np(term_signal);
    return fmt::format("killed by SIG{}", name ? name : std::to_string(term_signal));
  }
  return fmt::format("exit code {}", exit_code);
}

Result<ChildProcess> ChildProcess::start(const ChildSpec& spec) {
  UniqueFd out, err;
  if (!spec.stdout_path.empty()) {
    STITCH_ASSIGN_OR_RETURN(out, open_output_file(spec.stdout_path));
  }
  if (!spec.stderr_path.empty() && spec.stderr_path != spec.stdout_path) {
    STITCH_ASSIGN_OR_RETURN(err, open_output_file(spec.stderr_path));
  }
  int err_fd = spec.stderr_path.empty() ? -1 : err.valid() ? err.get() : out.get();
  STITCH_ASSIGN_OR_RETURN(pid_t pid, spawn_child(spec, {-1, out.get(), err_fd}));
  return ChildProcess(pid);
}

ChildProcess::ChildProcess(pid_t pid) : pid_(pid), started_s_(now_s()) {}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      started_s_(other.started_s_),
      result_(std::move(other.result_)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0) stop(0, 0.5);
    pid_ = std::exchange(other.pid_, -1);
    started_s_ = other.started_s_;
    result_ = std::move(other.result_);
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) stop(0, 0.5);
}

bool ChildProcess::exited() {
  if (result_ || pid_ <= 0) return true;
  siginfo_t info{};
  // WNOWAIT leaves the child a zombie: its pid, and with it the process group id, stay reserved
  // until the group has been killed.
  if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return true;
  return info.si_pid == pid_;
}

void ChildProcess::signal_group(int signal_number) {
  if (pid_ > 0 && !result_) kill(-pid_, signal_number);
}

ProcessResult ChildProcess::reap(bool timed_out) {
  if (result_) return *result_;
  if (pid_ <= 0) return ProcessResult{};  // moved from: no child, and no group to kill
  kill(-pid_, SIGKILL);  // whatever the child left running in its group
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  unregister_child_group(pid_);
  ProcessResult result;
  result.wall_s = now_s() - started_s_;
  result.timed_out = timed_out;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  result_ = result;
  return result;
}

std::optional<ProcessResult> ChildProcess::poll() {
  if (result_) return result_;
  if (!exited()) return std::nullopt;
  return reap(false);
}

ProcessResult ChildProcess::wait() {
  if (result_ || pid_ <= 0) return reap(false);
  siginfo_t info{};
  while (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
  }
  return reap(false);
}

ProcessResult ChildProcess::stop(double grace_s, double kill_grace_s) {
  if (result_) return *result_;
  auto wait_for_exit = [&](double seconds) {
    double deadline = now_s() + seconds;
    while (!exited() && now_s() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return exited();
  };
  bool killed = false;
  if (!wait_for_exit(grace_s)) {
    killed = true;
    kill(-pid_, SIGTERM);
    if (!wait_for_exit(kill_grace_s)) kill(-pid_, SIGKILL);
  }
  return reap(killed);
}

}  // namespace stitch
