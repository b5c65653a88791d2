#include "mcp/json_rpc.h"

namespace stitch::mcp {

using nlohmann::json;

namespace {

bool is_valid_id(const json& id) {
  return id.is_string() || id.is_number_integer();
}

RpcError invalid(const json& id, std::string message) {
  return RpcError{id, codes::invalid_request, std::move(message), nullptr};
}

}  // namespace

ParsedLine parse_line(std::string_view line) {
  ParsedLine parsed;
  json doc = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    parsed.error =
        RpcError{nullptr, codes::parse_error, "Parse error: the line is not JSON", nullptr};
    return parsed;
  }
  if (doc.is_array()) {
    parsed.error = invalid(nullptr, "Invalid Request: batches are not part of MCP");
    return parsed;
  }
  if (!doc.is_object()) {
    parsed.error = invalid(nullptr, "Invalid Request: a message is a JSON object");
    return parsed;
  }
  const json id = doc.contains("id") ? doc["id"] : json();
  const json reply_id = doc.contains("id") && is_valid_id(id) ? id : json();
  if (doc.value("jsonrpc", json()) != "2.0") {
    parsed.error = invalid(reply_id, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
    return parsed;
  }
  if (!doc.contains("method") && (doc.contains("result") || doc.contains("error"))) {
    parsed.is_response = true;
    return parsed;
  }
  if (!doc.contains("method") || !doc["method"].is_string()) {
    parsed.error = invalid(reply_id, "Invalid Request: \"method\" must be a string");
    return parsed;
  }
  if (doc.contains("id") && !is_valid_id(id)) {
    parsed.error = invalid(nullptr, "Invalid Request: \"id\" must be a string or an integer");
    return parsed;
  }
  if (doc.contains("params") && !doc["params"].is_object()) {
    parsed.error = invalid(reply_id, "Invalid Request: \"params\" must be an object");
    return parsed;
  }
  Incoming message;
  if (doc.contains("id")) message.id = id;
  message.method = doc["method"].get<std::string>();
  if (doc.contains("params")) message.params = doc["params"];
  parsed.message = std::move(message);
  return parsed;
}

json make_response(const json& id, json result) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json make_error_response(const RpcError& error) {
  json body = {{"code", error.code}, {"message", error.message}};
  if (!error.data.is_null()) body["data"] = error.data;
  return json{{"jsonrpc", "2.0"}, {"id", error.id}, {"error", std::move(body)}};
}

json make_notification(std::string_view method, json params) {
  return json{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

}  // namespace stitch::mcp
