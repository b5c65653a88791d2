#include "mcp/stdio_server.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "mcp/call_log.h"

namespace stitch::mcp {

void ThreadCallRunner::run(std::function<void()> job) {
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::lock_guard lock(mutex_);
  // A long session makes many calls: join the finished ones rather than keep them all.
  std::erase_if(calls_, [](Call& call) {
    if (!call.done->load()) return false;
    call.thread.join();
    return true;
  });
  calls_.push_back({std::thread([job = std::move(job), done] {
                      job();
                      done->store(true);
                    }),
                    done});
}

void ThreadCallRunner::wait() {
  std::vector<Call> calls;
  {
    std::lock_guard lock(mutex_);
    calls.swap(calls_);
  }
  for (auto& call : calls)
    call.thread.join();
}

void LineWriter::write(const nlohmann::json& message) {
  const std::string line = dump_line(message) + "\n";
  std::lock_guard lock(mutex_);
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the client went away; the call log still has the reply
    written += static_cast<size_t>(n);
  }
}

void serve_lines(std::istream& in, Server& server, ThreadCallRunner& runner) {
  std::string line;
  while (std::getline(in, line))
    server.handle_line(line);
  runner.wait();
}

Status serve_stdio(std::vector<std::unique_ptr<Tool>> tools, const StdioServeOptions& options) {
  STITCH_ASSIGN_OR_RETURN(std::unique_ptr<FileCallLog> log, FileCallLog::open(options.record_dir));
  std::cout.flush();
  const int protocol_fd = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (protocol_fd < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
    return make_error(ErrorKind::machine, "cannot keep stdout for the protocol: {}",
                      std::strerror(errno));
  // A client that goes away makes writes fail with EPIPE instead of killing the server mid-call.
  std::signal(SIGPIPE, SIG_IGN);
  fmt::print(stderr, "stitchcuda mcp: serving on stdio; calls recorded in {}\n",
             log->path().string());
  LineWriter writer(protocol_fd);
  ThreadCallRunner runner;
  Server server(
      options.info, std::move(tools), *log,
      [&writer](const nlohmann::json& message) { writer.write(message); }, runner);
  serve_lines(std::cin, server, runner);
  ::close(protocol_fd);
  return {};
}

}  // namespace stitch::mcp
