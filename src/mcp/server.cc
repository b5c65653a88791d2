#include "mcp/server.h"

#include <chrono>
#include <memory>

#include <fmt/format.h>

#include "mcp/schema_check.h"

namespace stitch::mcp {

using nlohmann::json;

struct Server::Request {
  json id;
  std::string method;
  json params;
  bool modern = false;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

namespace {

// A request's era: modern when its _meta names a protocol version.
bool carries_modern_meta(const json& params) {
  const auto meta = params.find("_meta");
  return meta != params.end() && meta->is_object() && meta->contains(kMetaVersionKey);
}

// The modern envelope's problems as a JSON-RPC error, or nullopt when the request may be served.
std::optional<RpcError> check_modern_envelope(const json& id, const json& params) {
  const json& meta = params["_meta"];
  const json& version = meta[std::string(kMetaVersionKey)];
  if (!version.is_string())
    return RpcError{id, codes::invalid_params,
                    fmt::format("_meta[\"{}\"] must be a string", kMetaVersionKey), nullptr};
  const auto capabilities = meta.find(kMetaCapabilitiesKey);
  if (capabilities == meta.end() || !capabilities->is_object())
    return RpcError{id, codes::invalid_params,
                    fmt::format("_meta[\"{}\"] (an object) is required with a protocol version",
                                kMetaCapabilitiesKey),
                    nullptr};
  if (version.get<std::string>() != kModernVersion)
    return RpcError{id, codes::unsupported_protocol_version, "Unsupported protocol version",
                    json{{"supported", json::array({kModernVersion})}, {"requested", version}}};
  return std::nullopt;
}

// The 2026-07-28 revision's caching hint on cacheable results (server/discover, tools/list): the
// tool list never changes while the server runs and names nothing of any user.
void add_cache_hint(json& result) {
  result["ttlMs"] = 3600000;
  result["cacheScope"] = "public";
}

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

Server::Server(ServerInfo info, std::vector<std::unique_ptr<Tool>> tools, CallLog& log, Send send,
               CallRunner& runner)
    : info_(std::move(info)),
      tools_(std::move(tools)),
      log_(log),
      send_(std::move(send)),
      runner_(runner) {
  // A schema keyword the checker does not enforce would be a rule silently not applied.
  for (const auto& tool : tools_)
    for (const auto& keyword : unsupported_schema_keywords(tool->spec().input_schema))
      fmt::print(stderr, "mcp: tool {} declares \"{}\", which is not checked\n", tool->spec().name,
                 keyword);
}

std::string Server::era() const {
  std::lock_guard lock(mutex_);
  return era_;
}

void Server::handle_line(std::string_view line) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;  // blank lines
  const ParsedLine parsed = parse_line(line);
  if (parsed.error) {
    const json response = make_error_response(*parsed.error);
    log_.record({{"at", utc_timestamp()},
                 {"kind", "malformed"},
                 {"line", std::string(line.substr(0, 4096))},
                 {"response", response}});
    send_(response);
    return;
  }
  if (parsed.is_response) {
    log_.record(
        {{"at", utc_timestamp()}, {"kind", "client_response"}, {"line", std::string(line)}});
    return;
  }
  if (parsed.message->is_request())
    handle_request(*parsed.message);
  else
    handle_notification(*parsed.message);
}

void Server::handle_notification(const Incoming& message) {
  log_.record({{"at", utc_timestamp()},
               {"kind", "notification"},
               {"method", message.method},
               {"params", message.params}});
  if (message.method == "notifications/initialized") {
    std::lock_guard lock(mutex_);
    era_ = "handshake";
  } else if (message.method == "notifications/cancelled" && message.params.contains("requestId")) {
    // A running tool cannot be stopped halfway (a build, a judge); its reply is dropped instead.
    // Only a call under way: a stale cancellation must not drop a later reply that reuses the id.
    std::lock_guard lock(mutex_);
    const std::string id = message.params["requestId"].dump();
    if (in_flight_.count(id)) cancelled_.insert(id);
  }
}

void Server::handle_request(const Incoming& message) {
  Request request{*message.id, message.method, message.params,
                  carries_modern_meta(message.params) && message.method != "initialize"};
  log_.record({{"at", utc_timestamp()},
               {"kind", "request"},
               {"id", request.id},
               {"method", request.method},
               {"params", request.params},
               {"era", request.modern ? "modern" : "handshake"}});
  {
    std::lock_guard lock(mutex_);
    in_flight_.insert(request.id.dump());
  }
  if (request.modern) {
    if (auto error = check_modern_envelope(request.id, request.params)) {
      finish(request, make_error_response(*error));
      return;
    }
  }
  dispatch(request);
}

void Server::dispatch(const Request& request) {
  const std::string& method = request.method;
  if (method == "initialize") {
    reply(request, initialize_result(request.params));
    return;
  }
  if (method == "ping") {
    reply(request, json::object());
    return;
  }
  if (method == "server/discover") {
    if (!request.modern) {
      reply_error(request, codes::invalid_params,
                  fmt::format("server/discover needs _meta[\"{}\"] and _meta[\"{}\"]",
                              kMetaVersionKey, kMetaCapabilitiesKey));
      return;
    }
    reply(request, discover_result());
    return;
  }
  if (method != "tools/list" && method != "tools/call") {
    reply_error(request, codes::method_not_found, fmt::format("Method not found: {}", method));
    return;
  }
  bool ready = request.modern;
  if (!ready) {
    std::lock_guard lock(mutex_);
    ready = initialized_;
  }
  if (!ready) {
    reply_error(request, codes::invalid_request,
                fmt::format("{} before initialize: send initialize first (protocol {}), or carry "
                            "_meta[\"{}\"] = \"{}\" on every request",
                            method, kLatestHandshakeVersion, kMetaVersionKey, kModernVersion));
    return;
  }
  if (method == "tools/list") {
    json list = tools_list();
    if (request.modern) add_cache_hint(list);
    reply(request, std::move(list));
  } else {
    call_tool(request);
  }
}

json Server::initialize_result(const json& params) {
  std::string version(kLatestHandshakeVersion);
  if (params.contains("protocolVersion") && params["protocolVersion"].is_string()) {
    const std::string asked = params["protocolVersion"].get<std::string>();
    for (auto known : kHandshakeVersions)
      if (asked == known) version = asked;
  }
  {
    std::lock_guard lock(mutex_);
    initialized_ = true;
    era_ = "handshake";
  }
  json result = {
      {"protocolVersion", version},
      {"capabilities", {{"tools", {{"listChanged", false}}}}},
      {"serverInfo", {{"name", info_.name}, {"title", info_.title}, {"version", info_.version}}}};
  if (!info_.instructions.empty()) result["instructions"] = info_.instructions;
  return result;
}

json Server::discover_result() const {
  json result = {
      {"supportedVersions", json::array({kModernVersion})},
      {"capabilities", {{"tools", json::object()}}},
      {"serverInfo", {{"name", info_.name}, {"title", info_.title}, {"version", info_.version}}}};
  if (!info_.instructions.empty()) result["instructions"] = info_.instructions;
  add_cache_hint(result);
  return result;
}

json Server::tools_list() const {
  json tools = json::array();
  for (const auto& tool : tools_) {
    const ToolSpec& spec = tool->spec();
    tools.push_back({{"name", spec.name},
                     {"title", spec.title},
                     {"description", spec.description},
                     {"inputSchema", spec.input_schema}});
  }
  return json{{"tools", tools}};
}

Tool* Server::find_tool(std::string_view name) const {
  for (const auto& tool : tools_)
    if (tool->spec().name == name) return tool.get();
  return nullptr;
}

void Server::call_tool(const Request& request) {
  const json& params = request.params;
  if (!params.contains("name") || !params["name"].is_string()) {
    reply_error(request, codes::invalid_params, "tools/call needs \"name\", a string");
    return;
  }
  const std::string name = params["name"].get<std::string>();
  Tool* tool = find_tool(name);
  if (!tool) {
    reply_error(request, codes::invalid_params, fmt::format("Unknown tool: {}", name));
    return;
  }
  const json arguments = params.value("arguments", json::object());
  if (!arguments.is_object()) {
    reply_error(request, codes::invalid_params, "tools/call \"arguments\" must be an object");
    return;
  }
  // Arguments that break the schema are a tool execution error (the 2025-11-25 revision's rule):
  // the model reads which ones and can correct itself.
  const std::vector<std::string> problems =
      check_against_schema(arguments, tool->spec().input_schema);
  if (!problems.empty()) {
    std::string text = fmt::format("invalid arguments for {}:", name);
    for (const auto& problem : problems)
      text += "\n- " + problem;
    reply(request,
          json{{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", true}});
    return;
  }
  auto shared = std::make_shared<Request>(request);
  runner_.run([this, shared, tool, arguments] { run_tool(*shared, *tool, arguments); });
}

void Server::run_tool(const Request& request, Tool& tool, const json& arguments) {
  ProgressReport progress;
  const json meta = request.params.value("_meta", json::object());
  if (meta.is_object() && meta.contains("progressToken")) {
    auto count = std::make_shared<int>(0);
    const json token = meta["progressToken"];
    progress = [this, token, count](const std::string& message) {
      const json note = make_notification(
          "notifications/progress",
          {{"progressToken", token}, {"progress", ++*count}, {"message", message}});
      log_.record({{"at", utc_timestamp()}, {"kind", "progress"}, {"notification", note}});
      send_(note);
    };
  }
  ToolOutput output;
  try {
    output = tool.call(arguments, progress);
  } catch (const std::exception& error) {
    // Tools return errors as data; an exception is a bug, still answered rather than lost.
    output = tool_error(fmt::format("internal error in {}: {}", tool.spec().name, error.what()));
  }
  std::string text = output.text;
  if (text.empty() && !output.structured.is_null())
    text = output.structured.dump(2, ' ', false, json::error_handler_t::replace);
  json result = {{"content", json::array({{{"type", "text"}, {"text", text}}})},
                 {"isError", output.is_error}};
  if (output.structured.is_object()) result["structuredContent"] = output.structured;
  reply(request, std::move(result));
}

void Server::reply(const Request& request, json result) {
  if (request.modern) result["resultType"] = "complete";
  finish(request, make_response(request.id, std::move(result)));
}

void Server::reply_error(const Request& request, int code, std::string message, json data) {
  finish(request,
         make_error_response(RpcError{request.id, code, std::move(message), std::move(data)}));
}

void Server::finish(const Request& request, const json& response) {
  bool cancelled = false;
  {
    std::lock_guard lock(mutex_);
    in_flight_.erase(request.id.dump());
    cancelled = cancelled_.erase(request.id.dump()) > 0;
    if (request.modern) era_ = "modern";
  }
  log_.record({{"at", utc_timestamp()},
               {"kind", cancelled ? "response_dropped_cancelled" : "response"},
               {"id", request.id},
               {"method", request.method},
               {"ms", milliseconds_since(request.start)},
               {"response", response}});
  if (!cancelled) send_(response);
}

}  // namespace stitch::mcp
