// What the sandbox suites' child reports to the test: one line per check, "OK", "FAIL" or "NOTE"
// (a check the kernel here cannot run, said visibly), written to a pipe the isolation keeps open.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/format.h>

namespace stitch::sandbox::testing {

class Probe {
 public:
  explicit Probe(int fd) : fd_(fd) {}
  // `refused` true: the attempt failed, as it must.
  void refused(bool refused, const std::string& what) {
    line(refused ? "OK" : "FAIL", refused ? what : what + " SUCCEEDED");
  }
  void works(bool worked, const std::string& what) {
    line(worked ? "OK" : "FAIL",
         worked ? what : fmt::format("{} failed: {}", what, strerror(errno)));
  }
  void note(const std::string& what) { line("NOTE", what); }
  void line(const char* status, const std::string& text) {
    std::string out = fmt::format("{} {}\n", status, text);
    ssize_t ignored = ::write(fd_, out.data(), out.size());
    (void)ignored;
  }

 private:
  int fd_;
};

// Forks a child that runs `body(report_fd)` (which ends with _exit) and reads what it reported
// until it ends. `status` is its wait status.
struct ProbeRun {
  std::string lines;
  int status = 0;
  bool exited_cleanly() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};
template <class Body>
ProbeRun run_probe_child(Body body) {
  ProbeRun run;
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) return {"FAIL pipe2: " + std::string(strerror(errno)), -1};
  pid_t pid = fork();
  if (pid == 0) {
    ::close(ends[0]);
    body(ends[1]);
    _exit(0);
  }
  ::close(ends[1]);
  char buffer[4096];
  for (ssize_t got; (got = ::read(ends[0], buffer, sizeof buffer)) > 0;)
    run.lines.append(buffer, got);
  ::close(ends[0]);
  waitpid(pid, &run.status, 0);
  return run;
}

}  // namespace stitch::sandbox::testing
