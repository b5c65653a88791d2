#include "llm/http_chat_client.h"

#include <cstdlib>
#include <optional>

#include "llm/chat_wire.h"
#include "llm/sse_parser.h"
#include "util/json_fields.h"

namespace stitch::llm {

using nlohmann::json;

namespace {

// What one HTTP attempt came to, and what to do next.
enum class Next : uint8_t { done, retry, drop_response_format, fail };

struct AttemptOutcome {
  Next next = Next::fail;
  std::optional<ChatReply> reply;
  std::string problem;  // why it is retried or failed
  std::optional<std::string> retry_after;
  bool transport = false;  // the problem was the transport's (ErrorKind::machine)
};

AttemptOutcome done(ChatReply reply) {
  AttemptOutcome outcome;
  outcome.next = Next::done;
  outcome.reply = std::move(reply);
  return outcome;
}

AttemptOutcome unsuccessful(Next next, std::string problem, bool transport = false,
                            std::optional<std::string> retry_after = std::nullopt) {
  AttemptOutcome outcome;
  outcome.next = next;
  outcome.problem = std::move(problem);
  outcome.transport = transport;
  outcome.retry_after = std::move(retry_after);
  return outcome;
}

std::string excerpt(std::string_view text, size_t limit = 300) {
  std::string out(text.substr(0, limit));
  for (char& c : out)
    if (c == '\n' || c == '\r') c = ' ';
  return text.size() > limit ? out + "…" : out;
}

bool retryable_status(long status) {
  return status == 408 || status == 429 || status >= 500;
}

AttemptOutcome parse_stream(const HttpResponse& response) {
  SseParser parser;
  StreamAssembler assembler;
  std::vector<std::string> events = parser.feed(response.body);
  if (response.failure == TransportFailure::none)
    for (std::string& event : parser.finish())
      events.push_back(std::move(event));
  for (const std::string& data : events) {
    if (Status applied = assembler.apply(data); !applied.ok())
      return unsuccessful(Next::fail, applied.error().message);
  }
  if (!assembler.finished() && !assembler.done())
    return unsuccessful(Next::retry, "the stream ended before the reply did (dropped)", true);
  return done(assembler.reply());
}

AttemptOutcome parse_body(const HttpResponse& response) {
  json body = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded())
    return unsuccessful(Next::fail,
                        fmt::format("the response is not JSON: {}", excerpt(response.body)));
  Result<ChatReply> reply = reply_from_wire(body);
  if (!reply.ok()) return unsuccessful(Next::fail, reply.error().message);
  return done(std::move(*reply));
}

AttemptOutcome judge_attempt(const HttpResponse& response, bool stream, bool response_format) {
  const bool transient_transport = response.failure == TransportFailure::stalled ||
                                   response.failure == TransportFailure::dropped;
  if (response.failure != TransportFailure::none && !transient_transport)
    return unsuccessful(Next::fail, response.failure_message, true);
  if (transient_transport && (response.status == 0 || response.status == 200)) {
    std::string what = response.failure == TransportFailure::stalled
                           ? "stalled: " + response.failure_message
                           : "connection dropped: " + response.failure_message;
    return unsuccessful(Next::retry, what, true);
  }
  if (response.status == 200) return stream ? parse_stream(response) : parse_body(response);
  std::string problem = fmt::format("HTTP {}: {}", response.status, excerpt(response.body));
  if (retryable_status(response.status))
    return unsuccessful(Next::retry, problem, false, response.header("retry-after"));
  if (response.status == 400 && response_format &&
      response.body.find("response_format") != std::string::npos)
    return unsuccessful(Next::drop_response_format, problem);
  return unsuccessful(Next::fail, problem);
}

}  // namespace

// Everything one complete() call accumulates, for the reply and its transcript.
struct HttpChatClient::Exchange {
  Redactor redactor;
  std::string api_key;
  WireOptions wire;
  json attempts = json::array();
  std::string raw;  // every attempt's bytes, each after a header line
  std::optional<ChatReply> reply;
  std::optional<Error> error;
  bool response_format_dropped = false;
};

std::string endpoint_url(const Endpoint& endpoint, std::string_view path) {
  std::string base = endpoint.api_base;
  while (!base.empty() && base.back() == '/')
    base.pop_back();
  while (!path.empty() && path.front() == '/')
    path.remove_prefix(1);
  return base + "/" + std::string(path);
}

Result<std::string> read_api_key(const Endpoint& endpoint) {
  if (endpoint.api_key_env.empty()) return std::string();
  const char* value = std::getenv(endpoint.api_key_env.c_str());
  if (value == nullptr || *value == '\0')
    return make_error(ErrorKind::bad_input,
                      "the API key's environment variable {} (endpoint {}) is not set",
                      endpoint.api_key_env, endpoint.api_base);
  return std::string(value);
}

std::vector<std::string> request_headers(const std::string& api_key, bool stream) {
  std::vector<std::string> headers = {
      "Content-Type: application/json",
      stream ? "Accept: text/event-stream" : "Accept: application/json"};
  if (!api_key.empty()) headers.push_back("Authorization: Bearer " + api_key);
  return headers;
}

HttpChatClient::HttpChatClient(Endpoint endpoint, HttpChatClientOptions options)
    : endpoint_(std::move(endpoint)),
      options_(std::move(options)),
      transport_(options_.transport),
      clock_(options_.clock),
      transcripts_(options_.transcript_dir),
      jitter_rng_(options_.jitter_seed != 0 ? options_.jitter_seed : std::random_device{}()) {
  if (transport_ == nullptr)
    transport_ = (own_transport_ = std::make_unique<CurlTransport>()).get();
  if (clock_ == nullptr) clock_ = (own_clock_ = std::make_unique<SystemRetryClock>()).get();
}

double HttpChatClient::jitter() {
  std::lock_guard lock(jitter_mutex_);
  return std::uniform_real_distribution<double>(0.0, 1.0)(jitter_rng_);
}

void HttpChatClient::run_attempts(const ChatRequest& request, Exchange& exchange) {
  HttpRequest http{"POST", endpoint_url(endpoint_, "chat/completions"),
                   request_headers(exchange.api_key, request.stream), "", endpoint_.timeout_s};
  int retries = 0;
  for (int attempt = 1;; ++attempt) {
    http.body = request_to_wire(request, exchange.wire).dump();
    HttpResponse response = transport_->send(http);
    AttemptOutcome outcome =
        judge_attempt(response, request.stream,
                      exchange.wire.response_format && request.response_schema.has_value());
    exchange.raw += fmt::format("--- attempt {}: HTTP {} {} ---\n", attempt, response.status,
                                enum_name(response.failure));
    exchange.raw += response.body + "\n";
    exchange.attempts.push_back({{"attempt", attempt},
                                 {"http_status", response.status},
                                 {"transport", enum_name(response.failure)},
                                 {"problem", outcome.problem}});
    json& record = exchange.attempts.back();
    if (outcome.next == Next::done) {
      exchange.reply = std::move(outcome.reply);
      exchange.reply->attempts = attempt;
      return;
    }
    if (outcome.next == Next::drop_response_format) {
      exchange.wire.response_format = false;
      exchange.response_format_dropped = true;
      record["next"] = "resend without response_format";
      continue;
    }
    if (outcome.next == Next::retry && retries < endpoint_.max_retries) {
      std::optional<double> asked;
      if (outcome.retry_after) asked = parse_retry_after(*outcome.retry_after, clock_->wall_now());
      double wait = asked ? std::min(*asked, options_.backoff.max_retry_after_s)
                          : backoff_delay_s(options_.backoff, retries, jitter());
      record["wait_s"] = wait;
      record["next"] = asked ? "retry after the server's Retry-After" : "retry after backoff";
      clock_->sleep_s(wait);
      ++retries;
      continue;
    }
    std::string message = outcome.next == Next::retry
                              ? fmt::format("{} (after {} attempts, {} retries allowed)",
                                            outcome.problem, attempt, endpoint_.max_retries)
                              : outcome.problem;
    exchange.error = Error{fmt::format("chat completion at {}: {}", http.url, message),
                           outcome.transport ? ErrorKind::machine : ErrorKind::work_failed};
    return;
  }
}

Result<ChatReply> HttpChatClient::complete(const ChatRequest& request) {
  STITCH_ASSIGN_OR_RETURN(std::string key, read_api_key(endpoint_));
  Exchange exchange;
  exchange.redactor = Redactor(key);
  exchange.api_key = key;
  exchange.wire.max_completion_tokens = sends_max_completion_tokens(endpoint_, request);
  const std::string label = request.label.empty() ? options_.role : request.label;
  json sent = {{"url", endpoint_url(endpoint_, "chat/completions")},
               {"role", options_.role},
               {"body", request_to_wire(request, exchange.wire)}};
  STITCH_ASSIGN_OR_RETURN(std::string stem, transcripts_.begin(label, sent, exchange.redactor));

  const double start = clock_->now_s();
  run_attempts(request, exchange);
  const double seconds = clock_->now_s() - start;

  ReplyRecord record;
  record.attempts = exchange.attempts;
  record.seconds = seconds;
  record.response_format_dropped = exchange.response_format_dropped;
  if (exchange.reply) {
    ChatReply& reply = *exchange.reply;
    reply.seconds = seconds;
    reply.response_format_dropped = exchange.response_format_dropped;
    reply.content = exchange.redactor.redact(reply.content);
    reply.reasoning = exchange.redactor.redact(reply.reasoning);
    if (reply.model.empty()) reply.model = request.model;
    if (options_.ledger != nullptr) options_.ledger->add(options_.role, request.model, reply.usage);
    record.reply = reply;
  } else {
    exchange.error->message = exchange.redactor.redact(exchange.error->message);
    record.error = exchange.error->message;
  }
  STITCH_TRY(transcripts_.write(stem, ".reply.json", reply_record_to_json(record).dump(2),
                                exchange.redactor));
  STITCH_TRY(transcripts_.write(stem, ".raw.txt", exchange.raw, exchange.redactor));
  if (exchange.error) return *exchange.error;
  return std::move(*exchange.reply);
}

}  // namespace stitch::llm
