// The MCP server on stdio: newline-delimited JSON-RPC read from stdin, replies written to the
// process's original stdout. Before serving, fd 1 is pointed at stderr, so nothing but protocol
// messages can reach the client's stdout — not a stray print, not a child process (the harness,
// nvcc) that inherits it; logs go to stderr. Tool calls run on their own threads; at end of
// input the server waits for the calls under way, answers them, and returns.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <istream>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "mcp/server.h"
#include "util/result.h"

namespace stitch::mcp {

// One thread per tool call; finished ones are joined as new ones start, wait() joins them all.
class ThreadCallRunner : public CallRunner {
 public:
  ~ThreadCallRunner() override { wait(); }
  void run(std::function<void()> job) override;
  void wait();

 private:
  struct Call {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::mutex mutex_;
  std::vector<Call> calls_;
};

// Writes each message as one line to `fd` and flushes; safe from several threads.
class LineWriter {
 public:
  explicit LineWriter(int fd) : fd_(fd) {}
  void write(const nlohmann::json& message);

 private:
  int fd_;
  std::mutex mutex_;
};

// Serves lines of `in` until its end on `server`, whose replies `runner` completes (the caller
// made both with the same LineWriter). Returns once every call under way has answered.
void serve_lines(std::istream& in, Server& server, ThreadCallRunner& runner);

struct StdioServeOptions {
  ServerInfo info;
  std::filesystem::path record_dir;  // calls.jsonl goes here
};

// The whole server on this process's stdin/stdout (see the file comment). An Error only when it
// cannot start (the record directory cannot be made, stdout cannot be kept for the protocol).
Status serve_stdio(std::vector<std::unique_ptr<Tool>> tools, const StdioServeOptions& options);

}  // namespace stitch::mcp
