// LineChild: pipes for stdin and stdout around a ChildProcess; see line_child.h.
#include "util/line_child.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

namespace stitch {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

Result<std::unique_ptr<LineChild>> LineChild::spawn(const ChildSpec& spec) {
  if (!spec.stdout_path.empty())
    return make_error("child process: stdout of a line child is its pipe, not {}",
                      spec.stdout_path.string());
  STITCH_ASSIGN_OR_RETURN(
      UniqueFd stderr_fd,
      open_output_file(spec.stderr_path.empty() ? "/dev/null" : spec.stderr_path));
  STITCH_ASSIGN_OR_RETURN(Pipe in, make_pipe());
  STITCH_ASSIGN_OR_RETURN(Pipe out, make_pipe());
  // A judge that dies must show up as an error from write_line, not kill the orchestrator.
  signal(SIGPIPE, SIG_IGN);
  STITCH_ASSIGN_OR_RETURN(pid_t pid,
                          spawn_child(spec, {in.read.get(), out.write.get(), stderr_fd.get()}));
  return std::unique_ptr<LineChild>(
      new LineChild(ChildProcess(pid), std::move(in.write), std::move(out.read)));
}

LineChild::LineChild(ChildProcess child, UniqueFd stdin_fd, UniqueFd stdout_fd)
    : child_(std::move(child)), stdin_(std::move(stdin_fd)), stdout_(std::move(stdout_fd)) {}

LineChild::~LineChild() { stop(0, 0.5); }

Status LineChild::write_line(std::string_view line) {
  if (!stdin_.valid()) return make_error("child {}: stdin is closed", pid());
  std::string text(line);
  text += '\n';
  size_t written = 0;
  while (written < text.size()) {
    ssize_t n = write(stdin_.get(), text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return make_error("child {}: writing to its stdin failed: {}", pid(), std::strerror(errno));
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
    if (stdout_closed_ || !stdout_.valid()) {
      if (pending_.empty()) return {ReadStatus::closed, ""};
      ReadResult result{ReadStatus::line, std::move(pending_)};
      pending_.clear();
      return result;
    }
    double left = deadline - now_s();
    if (left <= 0) return {ReadStatus::timeout, ""};
    pollfd fd{stdout_.get(), POLLIN, 0};
    int ready = ::poll(&fd, 1, static_cast<int>(std::min(left * 1000.0, 1e9)) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // the deadline check above ends the wait
    ssize_t got = read(stdout_.get(), buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      stdout_closed_ = true;
    else
      pending_.append(buffer, static_cast<size_t>(got));
  }
}

void LineChild::close_stdin() { stdin_.reset(); }

ProcessResult LineChild::stop(double grace_s, double kill_grace_s) {
  close_stdin();
  ProcessResult result = child_.stop(grace_s, kill_grace_s);
  stdout_.reset();
  return result;
}

}  // namespace stitch
