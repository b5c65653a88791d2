// The OpenAI-compatible chat client: ChatClient over HTTP (POST {api_base}/chat/completions), for
// vLLM, SGLang, llama.cpp's server and hosted APIs alike.
//
// - Streams (SSE, with stream_options.include_usage) or not, as the request asks.
// - Retries 429, 5xx (and 408), stalls (no byte for Endpoint::timeout_s) and dropped connections
//   up to Endpoint::max_retries times, waiting the server's Retry-After or else an exponential
//   backoff with jitter. A refused connection, a missing host and other 4xx are not retried.
// - A 400 that names response_format (a server without JSON-schema output) is resent once
//   without it; the reply says so (ChatReply::response_format_dropped).
// - The budget goes out as max_completion_tokens to reasoning models (chat_wire.h says when);
//   an answer that arrives only in reasoning/reasoning_content becomes the content.
// - Every exchange is written to the transcript directory (transcript.h) and its usage added to
//   the ledger under the client's role. The API key is read from Endpoint::api_key_env when a
//   request is sent; it is redacted from every file, error and reply.
// complete() may be called from several threads at once.
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <random>
#include <string>

#include "llm/chat.h"
#include "llm/http_transport.h"
#include "llm/retry.h"
#include "llm/transcript.h"
#include "llm/usage_ledger.h"

namespace stitch::llm {

struct HttpChatClientOptions {
  std::filesystem::path transcript_dir;  // empty: no transcripts
  std::string role = "chat";             // the ledger's key; the transcripts' default label
  UsageLedger* ledger = nullptr;         // not owned; null: no accounting
  HttpTransport* transport = nullptr;    // not owned; null: libcurl
  RetryClock* clock = nullptr;           // not owned; null: the system clock and sleep
  BackoffPolicy backoff;
  uint64_t jitter_seed = 0;  // 0: a random seed
};

// "{api_base}/{path}" with exactly one slash between them.
std::string endpoint_url(const Endpoint& endpoint, std::string_view path);

// The key in the environment variable the endpoint names ("" when it names none). An Error
// (bad input) naming the variable, never a value, when it is named but unset or empty.
Result<std::string> read_api_key(const Endpoint& endpoint);

// The request headers: JSON, and "Authorization: Bearer <key>" when there is a key.
std::vector<std::string> request_headers(const std::string& api_key, bool stream);

class HttpChatClient : public ChatClient {
 public:
  explicit HttpChatClient(Endpoint endpoint, HttpChatClientOptions options = {});
  Result<ChatReply> complete(const ChatRequest& request) override;
  const Endpoint& endpoint() const { return endpoint_; }

 private:
  struct Exchange;
  double jitter();
  void run_attempts(const ChatRequest& request, Exchange& exchange);

  Endpoint endpoint_;
  HttpChatClientOptions options_;
  std::unique_ptr<HttpTransport> own_transport_;
  std::unique_ptr<RetryClock> own_clock_;
  HttpTransport* transport_;
  RetryClock* clock_;
  TranscriptWriter transcripts_;
  std::mutex jitter_mutex_;
  std::mt19937_64 jitter_rng_;
};

}  // namespace stitch::llm
