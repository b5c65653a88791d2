// parse_line: what each line is, and the JSON-RPC error that answers a bad one.
#include "mcp/json_rpc.h"

#include <gtest/gtest.h>

namespace stitch::mcp {
namespace {

TEST(ParseLine, ReadsRequestsAndNotifications) {
  ParsedLine request = parse_line(R"({"jsonrpc":"2.0","id":"a1","method":"tools/list"})");
  ASSERT_TRUE(request.message);
  EXPECT_TRUE(request.message->is_request());
  EXPECT_EQ(*request.message->id, "a1");
  EXPECT_EQ(request.message->params, nlohmann::json::object());

  ParsedLine note = parse_line(R"({"jsonrpc":"2.0","method":"x","params":{"k":1}})");
  ASSERT_TRUE(note.message);
  EXPECT_FALSE(note.message->is_request());
  EXPECT_EQ(note.message->params["k"], 1);
}

TEST(ParseLine, MalformedJsonIsAParseErrorWithANullId) {
  ParsedLine parsed = parse_line(R"({"jsonrpc":"2.0","id":1,"method":)");
  ASSERT_TRUE(parsed.error);
  EXPECT_EQ(parsed.error->code, codes::parse_error);
  EXPECT_TRUE(parsed.error->id.is_null());
}

TEST(ParseLine, ValidJsonThatIsNotARequestIsInvalidRequest) {
  for (const char* line :
       {R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])", "42", R"({"id":1,"method":"ping"})",
        R"({"jsonrpc":"1.0","id":1,"method":"p"})", R"({"jsonrpc":"2.0","id":1,"method":7})",
        R"({"jsonrpc":"2.0","id":{"x":1},"method":"ping"})",
        R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})",
        R"({"jsonrpc":"2.0","id":1,"method":"ping","params":[1]})"}) {
    ParsedLine parsed = parse_line(line);
    ASSERT_TRUE(parsed.error) << line;
    EXPECT_EQ(parsed.error->code, codes::invalid_request) << line;
  }
  // The id is echoed when it can be read.
  EXPECT_EQ(parse_line(R"({"jsonrpc":"2.0","id":9,"method":"p","params":3})").error->id, 9);
}

TEST(ParseLine, AClientResponseIsRecognisedNotAnswered) {
  ParsedLine parsed = parse_line(R"({"jsonrpc":"2.0","id":3,"result":{}})");
  EXPECT_TRUE(parsed.is_response);
  EXPECT_FALSE(parsed.error);
  EXPECT_FALSE(parsed.message);
}

TEST(MakeErrorResponse, CarriesDataOnlyWhenGiven) {
  nlohmann::json plain = make_error_response({1, codes::method_not_found, "no", nullptr});
  EXPECT_EQ(plain["error"]["code"], -32601);
  EXPECT_FALSE(plain["error"].contains("data"));
  nlohmann::json with = make_error_response({1, codes::internal_error, "x", {{"k", 1}}});
  EXPECT_EQ(with["error"]["data"]["k"], 1);
}

}  // namespace
}  // namespace stitch::mcp
