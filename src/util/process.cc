// SystemProcessRunner: spawn with pipes, feed stdin, read both outputs until the child and its
// group are gone, with the deadline's SIGTERM then SIGKILL; see process.h.
#include "util/process.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <iostream>

namespace stitch {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The child's end of one output: the file, when the spec names one, else the pipe we read.
struct Output {
  UniqueFd file;
  Pipe pipe;
  int child_end() const { return file.valid() ? file.get() : pipe.write.get(); }
};

Result<Output> make_output(const std::filesystem::path& path) {
  Output output;
  STITCH_ASSIGN_OR_RETURN(output.pipe, make_pipe());
  if (!path.empty()) {
    STITCH_ASSIGN_OR_RETURN(output.file, open_output_file(path));
  }
  return output;
}

// Reads the child's stdout and stderr pipes as they fill, with the deadline; see run().
class OutputPump {
 public:
  OutputPump(const ProcessSpec& spec, ProcessResult& result) : spec_(spec), result_(result) {}

  // Reads what is ready (waiting at most 50 ms); false once both pipes are closed.
  bool pump(pollfd (&fds)[2]) {
    int n = ::poll(fds, 2, 50);
    if (n < 0 && errno != EINTR) return false;
    std::string* sinks[2] = {&result_.stdout_text, &result_.stderr_text};
    int open = 0;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0) continue;
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t got = read(fds[i].fd, buffer_, sizeof buffer_);
        if (got <= 0) {
          close(fds[i].fd);
          fds[i].fd = -1;
          continue;
        }
        if (sinks[i]->size() < spec_.max_captured_bytes) sinks[i]->append(buffer_, got);
        if (i == 0 && spec_.on_stdout_line) split_lines(got);
        if (i == 1 && spec_.echo_stderr) {
          std::cerr.write(buffer_, got);
          std::cerr.flush();
        }
      }
      ++open;
    }
    return open > 0;
  }

  void flush_last_line() {
    if (spec_.on_stdout_line && !pending_line_.empty()) spec_.on_stdout_line(pending_line_);
  }

 private:
  void split_lines(ssize_t got) {
    pending_line_.append(buffer_, got);
    size_t newline;
    while ((newline = pending_line_.find('\n')) != std::string::npos) {
      spec_.on_stdout_line(std::string_view(pending_line_).substr(0, newline));
      pending_line_.erase(0, newline + 1);
    }
  }

  const ProcessSpec& spec_;
  ProcessResult& result_;
  std::string pending_line_;  // stdout text after the last newline, for on_stdout_line
  char buffer_[65536];
};

}  // namespace

Result<ProcessResult> SystemProcessRunner::run(const ProcessSpec& spec) {
  STITCH_ASSIGN_OR_RETURN(Pipe in, make_pipe());
  STITCH_ASSIGN_OR_RETURN(Output out, make_output(spec.stdout_path));
  STITCH_ASSIGN_OR_RETURN(Output err, make_output(spec.stderr_path));
  auto start = Clock::now();
  STITCH_ASSIGN_OR_RETURN(pid_t pid,
                          spawn_child(spec, {in.read.get(), out.child_end(), err.child_end()}));
  ChildProcess child(pid);
  // Only the child holds its ends now: a pipe reaches end of file when the child's group is gone.
  for (UniqueFd* child_end : {&in.read, &out.file, &out.pipe.write, &err.file, &err.pipe.write})
    child_end->reset();

  // Feed stdin (small texts only; larger inputs go through files).
  if (!spec.stdin_text.empty()) {
    signal(SIGPIPE, SIG_IGN);
    ssize_t ignored = write(in.write.get(), spec.stdin_text.data(), spec.stdin_text.size());
    (void)ignored;
  }
  in.write.reset();

  ProcessResult result;
  bool term_sent = false;
  Clock::time_point term_time;
  auto check_deadline = [&] {
    if (spec.timeout_s > 0 && seconds_since(start) > spec.timeout_s && !term_sent) {
      result.timed_out = true;
      child.signal_group(SIGTERM);
      term_sent = true;
      term_time = Clock::now();
    }
    if (term_sent && seconds_since(term_time) > spec.kill_grace_s) child.signal_group(SIGKILL);
  };

  OutputPump pump(spec, result);
  pollfd fds[2] = {{out.pipe.read.release(), POLLIN, 0}, {err.pipe.read.release(), POLLIN, 0}};
  // A grandchild may hold the pipes open after the child exits; poll() kills the child's group
  // once it has exited, which closes them.
  std::optional<ProcessResult> ended;
  while (pump.pump(fds)) {
    check_deadline();
    if (!ended) ended = child.poll();
  }
  for (auto& fd : fds)
    if (fd.fd >= 0) close(fd.fd);
  pump.flush_last_line();
  while (!ended) {
    check_deadline();
    if (!(ended = child.poll())) usleep(10000);
  }
  result.wall_s = seconds_since(start);
  result.exit_code = ended->exit_code;
  result.term_signal = ended->term_signal;
  return result;
}

}  // namespace stitch
