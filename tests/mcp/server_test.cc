// The protocol over fake tools: the handshake era (initialize, version negotiation, ping,
// tools/list, tools/call), the stateless 2026-07-28 era (server/discover, per-request _meta,
// resultType, unsupported versions), JSON-RPC errors for malformed and invalid requests and
// unknown methods, arguments checked against the declared schema, progress notifications,
// cancellation, and every exchange in the call log.
#include "mcp/server.h"

#include <gtest/gtest.h>

#include "mcp_fakes.h"

namespace stitch::mcp {
namespace {

using nlohmann::json;
using testing::modern_meta;
using testing::ServerHarness;

// An echo tool with a schema of each kind the checker enforces, and one that reports progress.
std::vector<std::unique_ptr<Tool>> fake_tools(std::vector<json>* calls = nullptr) {
  std::vector<std::unique_ptr<Tool>> tools;
  tools.push_back(
      std::make_unique<FunctionTool>(ToolSpec{"echo", "Echo", "Returns its arguments",
                                              json::parse(R"({"type":"object","properties":{
                 "text":{"type":"string","minLength":1},
                 "times":{"type":"integer","minimum":1,"maximum":3}},
                 "required":["text"],"additionalProperties":false})")},
                                     [calls](const json& args, const ProgressReport&) {
                                       if (calls) calls->push_back(args);
                                       return ToolOutput{json{{"echo", args["text"]}}, "", false};
                                     }));
  tools.push_back(std::make_unique<FunctionTool>(
      ToolSpec{"slow", "Slow", "Reports progress",
               json{{"type", "object"}, {"properties", json::object()}}},
      [](const json&, const ProgressReport& progress) {
        if (progress) {
          progress("building");
          progress("judging");
        }
        return tool_error("it failed");
      }));
  return tools;
}

json call_params(const std::string& name, json arguments, json meta = nullptr) {
  json params = {{"name", name}, {"arguments", std::move(arguments)}};
  if (!meta.is_null()) params["_meta"] = std::move(meta);
  return params;
}

TEST(HandshakeEra, InitializeNegotiatesTheVersionAndListsTools) {
  ServerHarness h(fake_tools());
  json init = h.request(1, "initialize",
                        {{"protocolVersion", "2025-06-18"},
                         {"capabilities", json::object()},
                         {"clientInfo", {{"name", "c"}, {"version", "1"}}}});
  EXPECT_EQ(init["id"], 1);
  EXPECT_EQ(init["result"]["protocolVersion"], "2025-06-18");  // a known one is kept
  EXPECT_TRUE(init["result"]["capabilities"].contains("tools"));
  EXPECT_EQ(init["result"]["serverInfo"]["name"], "stitchcuda");
  EXPECT_EQ(init["result"]["instructions"], "use the tools");
  EXPECT_FALSE(init["result"].contains("resultType"));

  json future = h.request(2, "initialize", {{"protocolVersion", "2031-01-01"}});
  EXPECT_EQ(future["result"]["protocolVersion"], "2025-11-25");  // unknown: our latest
  // initialize asking for the stateless revision still gets a handshake-era answer.
  json modern = h.request(3, "initialize", {{"protocolVersion", "2026-07-28"}});
  EXPECT_EQ(modern["result"]["protocolVersion"], "2025-11-25");

  EXPECT_TRUE(h.exchange(R"({"jsonrpc":"2.0","method":"notifications/initialized"})").is_null());
  EXPECT_EQ(h.request(4, "ping", json::object())["result"], json::object());
  json list = h.request(5, "tools/list", json::object());
  ASSERT_EQ(list["result"]["tools"].size(), 2u);
  EXPECT_EQ(list["result"]["tools"][0]["name"], "echo");
  EXPECT_EQ(list["result"]["tools"][0]["inputSchema"]["required"][0], "text");
  EXPECT_FALSE(list["result"].contains("ttlMs"));
  EXPECT_EQ(h.server.era(), "handshake");
}

TEST(HandshakeEra, ToolsBeforeInitializeAreRefused) {
  ServerHarness h(fake_tools());
  json refused = h.request(1, "tools/list", json::object());
  EXPECT_EQ(refused["error"]["code"], codes::invalid_request);
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("initialize"), std::string::npos);
  EXPECT_EQ(h.request(2, "ping", json::object())["result"], json::object());  // ping always
}

TEST(HandshakeEra, ToolsCallAnswersStructuredContentAndText) {
  std::vector<json> calls;
  ServerHarness h(fake_tools(&calls));
  h.initialize();
  json reply = h.request(7, "tools/call", call_params("echo", {{"text", "hi"}, {"times", 2}}));
  ASSERT_TRUE(reply.contains("result")) << reply.dump();
  EXPECT_EQ(reply["result"]["isError"], false);
  EXPECT_EQ(reply["result"]["structuredContent"]["echo"], "hi");
  EXPECT_EQ(reply["result"]["content"][0]["type"], "text");
  EXPECT_EQ(json::parse(reply["result"]["content"][0]["text"].get<std::string>())["echo"], "hi");
  ASSERT_EQ(calls.size(), 1u);
}

TEST(Arguments, SchemaViolationsAreToolErrorsNamingEachOne) {
  std::vector<json> calls;
  ServerHarness h(fake_tools(&calls));
  h.initialize();
  json reply = h.request(1, "tools/call", call_params("echo", {{"times", 9}, {"extra", true}}));
  ASSERT_TRUE(reply.contains("result")) << reply.dump();
  EXPECT_EQ(reply["result"]["isError"], true);
  const std::string text = reply["result"]["content"][0]["text"];
  EXPECT_NE(text.find("missing required property \"text\""), std::string::npos) << text;
  EXPECT_NE(text.find("arguments.times: 9 is above the maximum 3"), std::string::npos) << text;
  EXPECT_NE(text.find("arguments.extra: unknown property"), std::string::npos) << text;
  EXPECT_TRUE(calls.empty()) << "the tool ran on arguments its schema refuses";
}

TEST(Arguments, MalformedCallsAreInvalidParams) {
  ServerHarness h(fake_tools());
  h.initialize();
  EXPECT_EQ(h.request(1, "tools/call", {{"arguments", json::object()}})["error"]["code"],
            codes::invalid_params);
  EXPECT_EQ(h.request(2, "tools/call", call_params("nope", json::object()))["error"]["code"],
            codes::invalid_params);
  EXPECT_EQ(h.request(3, "tools/call", call_params("echo", json::array({1})))["error"]["code"],
            codes::invalid_params);
}

TEST(JsonRpcErrors, MalformedInvalidAndUnknown) {
  ServerHarness h(fake_tools());
  h.initialize();
  json parse = h.exchange(R"({"jsonrpc":"2.0","id":1,"method":"tools/list")");
  EXPECT_EQ(parse["error"]["code"], codes::parse_error);
  EXPECT_TRUE(parse["id"].is_null());
  EXPECT_EQ(h.exchange(R"({"jsonrpc":"2.0","id":2})")["error"]["code"], codes::invalid_request);
  EXPECT_EQ(h.exchange(R"({"jsonrpc":"2.0","id":3,"method":"tools/list","params":"x"})")["id"], 3);
  json unknown = h.request(4, "resources/list", json::object());
  EXPECT_EQ(unknown["error"]["code"], codes::method_not_found);
  EXPECT_EQ(unknown["id"], 4);
  // Unknown notifications get no reply; blank lines are skipped.
  EXPECT_TRUE(h.exchange(R"({"jsonrpc":"2.0","method":"notifications/whatever"})").is_null());
  EXPECT_TRUE(h.exchange("   ").is_null());
}

TEST(StatelessEra, DiscoverAndCallsWithoutAHandshake) {
  ServerHarness h(fake_tools());
  json discover = h.request(1, "server/discover", {{"_meta", modern_meta()}});
  ASSERT_TRUE(discover.contains("result")) << discover.dump();
  EXPECT_EQ(discover["result"]["resultType"], "complete");
  EXPECT_EQ(discover["result"]["supportedVersions"], json::array({"2026-07-28"}));
  EXPECT_TRUE(discover["result"]["capabilities"].contains("tools"));
  EXPECT_EQ(discover["result"]["serverInfo"]["version"], "0.1.0");
  EXPECT_EQ(discover["result"]["cacheScope"], "public");
  EXPECT_GT(discover["result"]["ttlMs"], 0);

  json list = h.request(2, "tools/list", {{"_meta", modern_meta()}});
  EXPECT_EQ(list["result"]["resultType"], "complete");
  EXPECT_EQ(list["result"]["tools"].size(), 2u);
  EXPECT_EQ(list["result"]["cacheScope"], "public");  // cacheable in this era
  json call = h.request(3, "tools/call", call_params("echo", {{"text", "x"}}, modern_meta()));
  EXPECT_EQ(call["result"]["resultType"], "complete");
  EXPECT_EQ(call["result"]["structuredContent"]["echo"], "x");
  EXPECT_EQ(h.server.era(), "modern");
}

TEST(StatelessEra, EnvelopeErrors) {
  ServerHarness h(fake_tools());
  json old = h.request(1, "tools/list", {{"_meta", modern_meta("2025-11-25")}});
  EXPECT_EQ(old["error"]["code"], codes::unsupported_protocol_version);
  EXPECT_EQ(old["error"]["data"]["supported"], json::array({"2026-07-28"}));
  EXPECT_EQ(old["error"]["data"]["requested"], "2025-11-25");

  json meta = modern_meta();
  meta.erase("io.modelcontextprotocol/clientCapabilities");
  EXPECT_EQ(h.request(2, "tools/list", {{"_meta", meta}})["error"]["code"], codes::invalid_params);
  meta = modern_meta();
  meta["io.modelcontextprotocol/protocolVersion"] = 20260728;
  EXPECT_EQ(h.request(3, "tools/list", {{"_meta", meta}})["error"]["code"], codes::invalid_params);
  // server/discover without the envelope: a legacy client probing gets a JSON-RPC error.
  EXPECT_EQ(h.request(4, "server/discover", json::object())["error"]["code"],
            codes::invalid_params);
  EXPECT_EQ(h.request(5, "resources/list", {{"_meta", modern_meta()}})["error"]["code"],
            codes::method_not_found);
}

TEST(Progress, NotificationsCarryTheClientsTokenThenTheResult) {
  ServerHarness h(fake_tools());
  h.initialize();
  const size_t before = h.sent.size();
  h.request(9, "tools/call", call_params("slow", json::object(), {{"progressToken", "tok"}}));
  ASSERT_EQ(h.sent.size(), before + 3);
  EXPECT_EQ(h.sent[before]["method"], "notifications/progress");
  EXPECT_EQ(h.sent[before]["params"]["progressToken"], "tok");
  EXPECT_EQ(h.sent[before]["params"]["progress"], 1);
  EXPECT_EQ(h.sent[before + 1]["params"]["message"], "judging");
  EXPECT_EQ(h.sent[before + 2]["result"]["isError"], true);
  EXPECT_EQ(h.sent[before + 2]["result"]["content"][0]["text"], "it failed");
  // Without a token, no notifications.
  h.request(10, "tools/call", call_params("slow", json::object()));
  EXPECT_EQ(h.sent.size(), before + 4);
}

// A tool that cancels its own call from the client's side while it runs.
std::vector<std::unique_ptr<Tool>> cancelling_tool(Server** server) {
  std::vector<std::unique_ptr<Tool>> tools;
  tools.push_back(std::make_unique<FunctionTool>(
      ToolSpec{"cancelled", "Cancelled", "cancelled while it runs", json{{"type", "object"}}},
      [server](const json&, const ProgressReport&) {
        (*server)->handle_line(
            R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}})");
        return ToolOutput{json{{"late", true}}, "", false};
      }));
  return tools;
}

TEST(Cancellation, ACancelledCallsReplyIsRecordedNotSent) {
  Server* server = nullptr;
  ServerHarness h(cancelling_tool(&server));
  server = &h.server;
  h.initialize();
  EXPECT_TRUE(h.request(5, "tools/call", call_params("cancelled", json::object())).is_null());
  EXPECT_EQ(h.log.entries.back()["kind"], "response_dropped_cancelled");
  // A cancellation of nothing under way is ignored: the id's next use is answered.
  h.exchange(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}})");
  EXPECT_EQ(h.request(6, "ping", json::object())["id"], 6);
}

TEST(CallLog, EveryRequestIsRecordedBeforeItsResponseWithTiming) {
  ServerHarness h(fake_tools());
  h.initialize();
  h.request(1, "tools/call", call_params("echo", {{"text", "x"}}));
  h.exchange("not json");
  const auto& entries = h.log.entries;
  // initialize request + response, initialized, the call's request + response, the malformed line.
  ASSERT_EQ(entries.size(), 6u);
  EXPECT_EQ(entries[0]["kind"], "request");
  EXPECT_EQ(entries[0]["method"], "initialize");
  EXPECT_EQ(entries[2]["kind"], "notification");
  EXPECT_EQ(entries[3]["kind"], "request");
  EXPECT_EQ(entries[3]["params"]["arguments"]["text"], "x");
  EXPECT_EQ(entries[3]["era"], "handshake");
  EXPECT_EQ(entries[4]["kind"], "response");
  EXPECT_EQ(entries[4]["method"], "tools/call");
  EXPECT_GE(entries[4]["ms"].get<double>(), 0.0);
  EXPECT_EQ(entries[4]["response"]["result"]["structuredContent"]["echo"], "x");
  EXPECT_EQ(entries[5]["kind"], "malformed");
  EXPECT_EQ(entries[5]["line"], "not json");
  EXPECT_EQ(entries[5]["response"]["error"]["code"], codes::parse_error);
  for (const auto& entry : entries)
    EXPECT_TRUE(entry.contains("at")) << entry.dump();
}

TEST(Robustness, AToolThatThrowsIsAnsweredAsAToolError) {
  std::vector<std::unique_ptr<Tool>> tools;
  tools.push_back(std::make_unique<FunctionTool>(
      ToolSpec{"boom", "Boom", "throws", json{{"type", "object"}}},
      [](const json&, const ProgressReport&) -> ToolOutput { throw std::runtime_error("bug"); }));
  ServerHarness h(std::move(tools));
  json reply = h.request(1, "tools/call", call_params("boom", json::object(), nullptr));
  // Not initialized and no _meta: refused; with _meta it runs.
  EXPECT_EQ(reply["error"]["code"], codes::invalid_request);
  reply = h.request(2, "tools/call", call_params("boom", json::object(), modern_meta()));
  EXPECT_EQ(reply["result"]["isError"], true);
  EXPECT_NE(reply["result"]["content"][0]["text"].get<std::string>().find("bug"),
            std::string::npos);
}

}  // namespace
}  // namespace stitch::mcp
