// JSON-RPC 2.0 as MCP uses it over stdio: one message per line, requests (with an id),
// notifications (without) and the error codes of both JSON-RPC and MCP. Parsing a line says what
// the line is, or which error answers it; nothing here knows any MCP method.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace stitch::mcp {

// JSON-RPC 2.0's codes, and MCP's from the 2026-07-28 revision.
namespace codes {
inline constexpr int parse_error = -32700;
inline constexpr int invalid_request = -32600;
inline constexpr int method_not_found = -32601;
inline constexpr int invalid_params = -32602;
inline constexpr int internal_error = -32603;
inline constexpr int unsupported_protocol_version = -32022;  // data {supported, requested}
}  // namespace codes

// A line that parsed as a JSON-RPC request or notification.
struct Incoming {
  std::optional<nlohmann::json> id;  // nullopt: a notification (no reply)
  std::string method;
  nlohmann::json params = nlohmann::json::object();  // {} when absent
  bool is_request() const { return id.has_value(); }
};

// A JSON-RPC error to send back: the id is null when the request's could not be read.
struct RpcError {
  nlohmann::json id;
  int code = codes::internal_error;
  std::string message;
  nlohmann::json data;  // null: none
};

// What one input line is: a request or notification, a reply from the client (a response; the
// server sends no requests, so it is ignored), or the error that answers it. Malformed JSON is
// parse_error; valid JSON that is not a JSON-RPC 2.0 request (wrong version, no method, an id
// that is not a string or integer, params that are not an object, a batch) is invalid_request.
struct ParsedLine {
  std::optional<Incoming> message;
  std::optional<RpcError> error;
  bool is_response = false;
};
ParsedLine parse_line(std::string_view line);

nlohmann::json make_response(const nlohmann::json& id, nlohmann::json result);
nlohmann::json make_error_response(const RpcError& error);
nlohmann::json make_notification(std::string_view method, nlohmann::json params);

}  // namespace stitch::mcp
