// LineChild: fork/exec with pipes for stdin and stdout, its own process group, and a stop that
// kills the group; see verify_child_process.h.
#include "verify/verify_child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

extern char** environ;

namespace stitch {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<std::string> child_environment(const ChildSpec& spec) {
  std::map<std::string, std::string> merged;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string text = *entry;
    size_t eq = text.find('=');
    if (eq != std::string::npos) merged[text.substr(0, eq)] = text.substr(eq + 1);
  }
  for (const auto& name : spec.env_remove) merged.erase(name);
  for (const auto& [name, value] : spec.env) merged[name] = value;
  std::vector<std::string> result;
  for (const auto& [name, value] : merged) result.push_back(name + "=" + value);
  return result;
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

}  // namespace

Result<std::unique_ptr<LineChild>> LineChild::spawn(const ChildSpec& spec) {
  if (spec.argv.empty()) return make_error("child process: empty command line");
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::vector<std::string> env_strings = child_environment(spec);
  std::vector<char*> envp;
  for (auto& entry : env_strings) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = spec.argv;
  std::vector<char*> argv;
  for (auto& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::string stderr_path = spec.stderr_path.empty() ? "/dev/null" : spec.stderr_path.string();
  int stderr_fd = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (stderr_fd < 0)
    return make_error("child process: cannot open {}: {}", stderr_path, std::strerror(errno));

  int in_pipe[2], out_pipe[2], exec_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0) return make_error("child process: pipe failed");
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(exec_pipe, O_CLOEXEC) != 0) {
    close(in_pipe[0]);
    close(in_pipe[1]);
    return make_error("child process: pipe failed: {}", std::strerror(errno));
  }
  // A judge that dies must show up as an error from write_line, not kill the orchestrator.
  signal(SIGPIPE, SIG_IGN);

  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return make_error("child process: fork failed: {}", std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    // Should the orchestrator die without stopping it (a signal, a crash), the child gets SIGTERM
    // instead of living on; the judge also leaves when its stdin reaches end of file.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);  // it died before the line above
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(stderr_fd, 2);
    int error = 0;
    if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) {
      error = errno;
    } else {
      signal(SIGPIPE, SIG_DFL);
      execvpe(argv[0], argv.data(), envp.data());
      error = errno;
    }
    ssize_t ignored = write(exec_pipe[1], &error, sizeof error);
    (void)ignored;
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent: a stop right after spawn reaches the group
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(exec_pipe[1]);
  close(stderr_fd);

  int exec_error = 0;
  ssize_t got;
  do {
    got = read(exec_pipe[0], &exec_error, sizeof exec_error);
  } while (got < 0 && errno == EINTR);
  close(exec_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof exec_error)) {
    int status = 0;
    waitpid(pid, &status, 0);
    close(in_pipe[1]);
    close(out_pipe[0]);
    return make_error("cannot run {}: {}", spec.argv.front(), std::strerror(exec_error));
  }

  std::unique_ptr<LineChild> child(new LineChild());
  child->pid_ = pid;
  child->stdin_fd_ = in_pipe[1];
  child->stdout_fd_ = out_pipe[0];
  child->started_s_ = now_s();
  return child;
}

LineChild::~LineChild() { stop(0, 0.5); }

Status LineChild::write_line(std::string_view line) {
  if (stdin_fd_ < 0) return make_error("child {}: stdin is closed", pid_);
  std::string text(line);
  text += '\n';
  size_t written = 0;
  while (written < text.size()) {
    ssize_t n = write(stdin_fd_, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return make_error("child {}: writing to its stdin failed: {}", pid_, std::strerror(errno));
    written += static_cast<size_t>(n);
  }
  return {};
}

LineChild::ReadResult LineChild::read_line(double timeout_s) {
  double deadline = now_s() + timeout_s;
  char buffer[65536];
  while (true) {
    size_t newline = pending_.find('\n');
    if (newline != std::string::npos) {
      ReadResult result{ReadStatus::line, pending_.substr(0, newline)};
      pending_.erase(0, newline + 1);
      return result;
    }
    if (stdout_closed_ || stdout_fd_ < 0) {
      if (pending_.empty()) return {ReadStatus::closed, ""};
      ReadResult result{ReadStatus::line, std::move(pending_)};
      pending_.clear();
      return result;
    }
    double left = deadline - now_s();
    if (left <= 0) return {ReadStatus::timeout, ""};
    pollfd fd{stdout_fd_, POLLIN, 0};
    int ready = poll(&fd, 1, static_cast<int>(std::min(left * 1000.0, 1e9)) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // the deadline check above ends the wait
    ssize_t got = read(stdout_fd_, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      stdout_closed_ = true;
    else
      pending_.append(buffer, static_cast<size_t>(got));
  }
}

void LineChild::close_stdin() { close_fd(stdin_fd_); }

bool LineChild::exited() {
  if (stopped_) return true;
  siginfo_t info{};
  // WNOWAIT leaves the child a zombie: its pid, and with it the process group id, stay reserved
  // until stop() has killed the group, so the kill can never reach an unrelated group.
  if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return true;
  return info.si_pid == pid_;
}

ProcessResult LineChild::stop(double grace_s, double kill_grace_s) {
  if (stopped_) return result_;
  close_stdin();
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
  kill(-pid_, SIGKILL);  // whatever the child left running in its group
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  result_.wall_s = now_s() - started_s_;
  result_.timed_out = killed;
  if (WIFEXITED(status)) result_.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result_.term_signal = WTERMSIG(status);
  close_fd(stdout_fd_);
  stopped_ = true;
  return result_;
}

}  // namespace stitch
