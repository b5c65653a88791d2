// serve_lines with one thread per tool call: a call that takes long does not stop the server from
// answering what comes after it, and end of input waits for the call to answer.
#include "mcp/stdio_server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <sstream>

#include "mcp_fakes.h"

namespace stitch::mcp {
namespace {

using nlohmann::json;

TEST(ServeLines, ALongCallDoesNotBlockOtherRequests) {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<json> sent;
  bool ping_answered = false;
  bool waited_out = false;

  std::vector<std::unique_ptr<Tool>> tools;
  tools.push_back(std::make_unique<FunctionTool>(
      ToolSpec{"wait", "Wait", "Waits until the ping is answered", json{{"type", "object"}}},
      [&](const json&, const ProgressReport&) {
        std::unique_lock lock(mutex);
        waited_out =
            !changed.wait_for(lock, std::chrono::seconds(20), [&] { return ping_answered; });
        return ToolOutput{json{{"done", true}}, "", false};
      }));
  testing::MemoryCallLog log;
  ThreadCallRunner runner;
  Server server(
      ServerInfo{}, std::move(tools), log,
      [&](const json& message) {
        std::lock_guard lock(mutex);
        sent.push_back(message);
        if (message.value("id", json()) == 2) ping_answered = true;
        changed.notify_all();
      },
      runner);
  json call = {{"jsonrpc", "2.0"},
               {"id", 1},
               {"method", "tools/call"},
               {"params", {{"name", "wait"}, {"_meta", testing::modern_meta()}}}};
  std::istringstream in(call.dump() + "\n" + R"({"jsonrpc":"2.0","id":2,"method":"ping"})" + "\n");
  serve_lines(in, server, runner);  // returns only once the call has answered

  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0]["id"], 2);
  EXPECT_EQ(sent[1]["id"], 1);
  EXPECT_EQ(sent[1]["result"]["structuredContent"]["done"], true);
  EXPECT_FALSE(waited_out) << "the ping was answered only after the call finished";
}

}  // namespace
}  // namespace stitch::mcp
