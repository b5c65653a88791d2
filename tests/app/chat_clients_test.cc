// The real loop's chat client factory (app/chat_clients.h) gives the HTTP client: a request to an
// endpoint where nothing listens fails as a machine error naming the connection, after writing
// its transcript under <attempt>/llm/.
#include "app/chat_clients.h"

#include <gtest/gtest.h>

#include "temp_dir.h"

namespace stitch::app {
namespace {

TEST(ChatClients, TheDefaultFactoryGivesTheHttpClientWithTranscriptsInTheAttempt) {
  testing::TempDir attempt("chat_clients");
  llm::Endpoint endpoint;
  endpoint.api_base = "http://127.0.0.1:9/v1";  // discard port: nothing answers
  endpoint.max_retries = 0;
  endpoint.timeout_s = 5;
  auto client = default_chat_client_factory()(endpoint, attempt.path());
  ASSERT_TRUE(client.ok()) << client.error().message;
  llm::ChatRequest request;
  request.model = "m";
  request.label = "probe";
  request.messages.push_back(llm::text_message(llm::Role::user, "hello"));
  auto reply = (*client)->complete(request);
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().kind, ErrorKind::machine) << reply.error().message;
  bool transcript = false;
  for (const auto& entry : std::filesystem::directory_iterator(attempt.path() / "llm"))
    transcript |= entry.path().filename().string().find("probe") != std::string::npos;
  EXPECT_TRUE(transcript);
}

}  // namespace
}  // namespace stitch::app
