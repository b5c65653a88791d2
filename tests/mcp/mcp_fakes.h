// What the MCP tests share: a call log kept in memory, a server over it that collects what it
// sends, and a modern-era request envelope.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcp/server.h"

namespace stitch::mcp::testing {

class MemoryCallLog : public CallLog {
 public:
  void record(const nlohmann::json& entry) override {
    std::lock_guard lock(mutex_);
    entries.push_back(entry);
  }
  std::vector<nlohmann::json> entries;

 private:
  std::mutex mutex_;
};

// The _meta a 2026-07-28 client puts on every request.
inline nlohmann::json modern_meta(std::string version = "2026-07-28") {
  return {{"io.modelcontextprotocol/protocolVersion", version},
          {"io.modelcontextprotocol/clientCapabilities", nlohmann::json::object()},
          {"io.modelcontextprotocol/clientInfo", {{"name", "test"}, {"version", "1"}}}};
}

// A Server with the given tools whose replies land in `sent`, tool calls run inline.
struct ServerHarness {
  explicit ServerHarness(std::vector<std::unique_ptr<Tool>> tools)
      : server(
            ServerInfo{"stitchcuda", "StitchCUDA", "0.1.0", "use the tools"}, std::move(tools), log,
            [this](const nlohmann::json& message) { sent.push_back(message); }, runner) {}

  // Sends one line and returns the last message the server sent (null when none).
  nlohmann::json exchange(const std::string& line) {
    const size_t before = sent.size();
    server.handle_line(line);
    return sent.size() > before ? sent.back() : nlohmann::json();
  }
  nlohmann::json request(int id, const std::string& method, nlohmann::json params) {
    return exchange(
        nlohmann::json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}
            .dump());
  }
  void initialize() {
    request(0, "initialize",
            {{"protocolVersion", "2025-11-25"},
             {"capabilities", nlohmann::json::object()},
             {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
    exchange(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  }

  MemoryCallLog log;
  std::vector<nlohmann::json> sent;
  InlineCallRunner runner;
  Server server;
};

}  // namespace stitch::mcp::testing
