#include "util/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cstring>
#include <iostream>

extern char** environ;

namespace stitch {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void set_limit(int resource, std::optional<uint64_t> value) {
  if (!value) return;
  rlimit limit{static_cast<rlim_t>(*value), static_cast<rlim_t>(*value)};
  setrlimit(resource, &limit);
}

std::vector<std::string> build_environment(const ProcessSpec& spec) {
  std::map<std::string, std::string> merged;
  for (char** entry = environ; *entry; ++entry) {
    std::string text = *entry;
    auto eq = text.find('=');
    if (eq == std::string::npos) continue;
    merged[text.substr(0, eq)] = text.substr(eq + 1);
  }
  for (const auto& name : spec.env_remove) merged.erase(name);
  for (const auto& [name, value] : spec.env) merged[name] = value;
  std::vector<std::string> result;
  for (const auto& [name, value] : merged) result.push_back(name + "=" + value);
  return result;
}

// Child side of fork: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(const ProcessSpec& spec, char* const* argv, char* const* envp,
                             int stdin_fd, int stdout_fd, int stderr_fd) {
  setpgid(0, 0);
  dup2(stdin_fd, 0);
  dup2(stdout_fd, 1);
  dup2(stderr_fd, 2);
  if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) _exit(126);
  set_limit(RLIMIT_AS, spec.limits.address_space_bytes);
  set_limit(RLIMIT_CPU, spec.limits.cpu_seconds);
  set_limit(RLIMIT_FSIZE, spec.limits.file_size_bytes);
  set_limit(RLIMIT_NOFILE, spec.limits.open_files);
  if (spec.limits.no_core_dumps) set_limit(RLIMIT_CORE, 0);
  // Default signal dispositions for the child, whatever the parent installed.
  signal(SIGPIPE, SIG_DFL);
  execvpe(argv[0], argv, envp);
  _exit(127);
}

int open_output(const std::filesystem::path& path, int pipe_write_end) {
  if (path.empty()) return pipe_write_end;
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
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

std::string find_in_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  if (!path) return "";
  std::string dirs = path;
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(start, end - start) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

Result<ProcessResult> SystemProcessRunner::run(const ProcessSpec& spec) {
  if (spec.argv.empty()) return make_error("process: empty command line");
  std::vector<std::string> env_strings = build_environment(spec);
  std::vector<char*> envp;
  for (auto& entry : env_strings) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = spec.argv;
  std::vector<char*> argv;
  for (auto& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);

  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) || pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC))
    return make_error("process: pipe failed: {}", std::strerror(errno));
  int stdout_fd = open_output(spec.stdout_path, out_pipe[1]);
  int stderr_fd = open_output(spec.stderr_path, err_pipe[1]);
  if (stdout_fd < 0 || stderr_fd < 0)
    return make_error("process: cannot open output file: {}", std::strerror(errno));

  auto start = Clock::now();
  pid_t pid = fork();
  if (pid < 0) return make_error("process: fork failed: {}", std::strerror(errno));
  if (pid == 0) exec_child(spec, argv.data(), envp.data(), in_pipe[0], stdout_fd, stderr_fd);
  setpgid(pid, pid);  // also from the parent, so a kill right after fork reaches the group

  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (stdout_fd != out_pipe[1]) close(stdout_fd);
  if (stderr_fd != err_pipe[1]) close(stderr_fd);

  // Feed stdin (small texts only; larger inputs go through files).
  if (!spec.stdin_text.empty()) {
    signal(SIGPIPE, SIG_IGN);
    ssize_t ignored = write(in_pipe[1], spec.stdin_text.data(), spec.stdin_text.size());
    (void)ignored;
  }
  close(in_pipe[1]);

  ProcessResult result;
  std::string* sinks[2] = {&result.stdout_text, &result.stderr_text};
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  bool term_sent = false;
  Clock::time_point term_time;
  std::string pending_line;  // stdout text after the last newline, for on_stdout_line
  char buffer[65536];
  int status = 0;
  bool reaped = false;

  auto check_deadline = [&] {
    double elapsed = seconds_since(start);
    if (spec.timeout_s > 0 && elapsed > spec.timeout_s && !term_sent) {
      result.timed_out = true;
      kill(-pid, SIGTERM);
      term_sent = true;
      term_time = Clock::now();
    }
    if (term_sent && seconds_since(term_time) > spec.kill_grace_s) kill(-pid, SIGKILL);
  };

  while (open_fds > 0) {
    int n = poll(fds, 2, 50);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(fds[i].fd, buffer, sizeof buffer);
      if (got <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      if (sinks[i]->size() < spec.max_captured_bytes) sinks[i]->append(buffer, got);
      if (i == 0 && spec.on_stdout_line) {
        pending_line.append(buffer, got);
        size_t newline;
        while ((newline = pending_line.find('\n')) != std::string::npos) {
          spec.on_stdout_line(std::string_view(pending_line).substr(0, newline));
          pending_line.erase(0, newline + 1);
        }
      }
      if (i == 1 && spec.echo_stderr) {
        std::cerr.write(buffer, got);
        std::cerr.flush();
      }
    }
    check_deadline();
    // A grandchild may hold the pipes open after the child exits; stop reading once the child is
    // gone and its group has been killed.
    if (!reaped && waitpid(pid, &status, WNOHANG) == pid) {
      reaped = true;
      kill(-pid, SIGKILL);
    }
  }
  for (auto& fd : fds)
    if (fd.fd >= 0) close(fd.fd);
  if (spec.on_stdout_line && !pending_line.empty()) spec.on_stdout_line(pending_line);
  while (!reaped) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      reaped = true;
      break;
    }
    if (done < 0 && errno != EINTR) break;
    check_deadline();
    usleep(10000);
  }
  kill(-pid, SIGKILL);  // leave no orphans of the group behind
  result.wall_s = seconds_since(start);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  if (result.exit_code == 127 && result.stdout_text.empty() && result.stderr_text.empty() &&
      find_in_path(spec.argv[0]).empty())
    return make_error("{}: command not found", spec.argv[0]);
  return result;
}

}  // namespace stitch
