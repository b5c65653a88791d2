// The MCP server's protocol side: one JSON-RPC line in, replies out, over tools it does not know
// the insides of (tool.h). Both protocol eras are served on one connection:
//   - 2025-11-25 (and the handshake revisions before it): `initialize` negotiates the version, then
//     `notifications/initialized`, `ping`, `tools/list`, `tools/call`;
//   - 2026-07-28 (stateless): no handshake; every request carries
//     `_meta["io.modelcontextprotocol/protocolVersion"]` and `.../clientCapabilities`, and the
//     server answers `server/discover`; results carry `resultType: "complete"`.
// A request with the modern `_meta` is served in the modern era whatever came before; one without
// it needs the handshake first. tools/call runs on a CallRunner (threads on stdio, inline in
// tests) so a long verification never stops the server from answering others; everything is
// recorded in the CallLog.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcp/call_log.h"
#include "mcp/json_rpc.h"
#include "mcp/tool.h"

namespace stitch::mcp {

inline constexpr std::string_view kModernVersion = "2026-07-28";
inline constexpr std::string_view kLatestHandshakeVersion = "2025-11-25";
// The handshake-era revisions `initialize` accepts as asked; any other gets the latest.
inline constexpr std::string_view kHandshakeVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                          "2024-11-05"};
inline constexpr std::string_view kMetaVersionKey = "io.modelcontextprotocol/protocolVersion";
inline constexpr std::string_view kMetaCapabilitiesKey =
    "io.modelcontextprotocol/clientCapabilities";

struct ServerInfo {
  std::string name = "stitchcuda";
  std::string title = "StitchCUDA";
  std::string version;
  std::string instructions;  // for the model: how to use the tools (the skill file's gist)
};

// Sends one message to the client; called from several threads.
using Send = std::function<void(const nlohmann::json& message)>;

// Runs a tools/call off the reading thread.
class CallRunner {
 public:
  virtual ~CallRunner() = default;
  virtual void run(std::function<void()> job) = 0;
};

// Runs every job at once on the caller's thread (tests; a server that needs no concurrency).
class InlineCallRunner : public CallRunner {
 public:
  void run(std::function<void()> job) override { job(); }
};

class Server {
 public:
  // Tool names are unique; schemas stay within schema_check.h's subset (else a warning).
  Server(ServerInfo info, std::vector<std::unique_ptr<Tool>> tools, CallLog& log, Send send,
         CallRunner& runner);

  // One line from the client: answered (maybe later, by a CallRunner job), recorded.
  void handle_line(std::string_view line);

  // The era the last handled request was served in ("" before any).
  std::string era() const;

 private:
  struct Request;
  void handle_request(const Incoming& message);
  void handle_notification(const Incoming& message);
  void dispatch(const Request& request);
  nlohmann::json initialize_result(const nlohmann::json& params);
  nlohmann::json discover_result() const;
  nlohmann::json tools_list() const;
  void call_tool(const Request& request);
  void run_tool(const Request& request, Tool& tool, const nlohmann::json& arguments);
  void reply(const Request& request, nlohmann::json result);
  void reply_error(const Request& request, int code, std::string message,
                   nlohmann::json data = nullptr);
  void finish(const Request& request, const nlohmann::json& response);
  Tool* find_tool(std::string_view name) const;

  ServerInfo info_;
  std::vector<std::unique_ptr<Tool>> tools_;
  CallLog& log_;
  Send send_;
  CallRunner& runner_;
  mutable std::mutex mutex_;  // guards the fields below
  bool initialized_ = false;  // handshake era: initialize answered
  std::string era_;
  std::set<std::string> in_flight_;  // ids (as JSON) of requests not yet answered
  std::set<std::string> cancelled_;  // ids of those whose reply the client no longer wants
};

}  // namespace stitch::mcp
