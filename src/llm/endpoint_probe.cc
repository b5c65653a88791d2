#include "llm/endpoint_probe.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "llm/http_chat_client.h"
#include "llm/transcript.h"
#include "util/json_fields.h"

namespace stitch::llm {

namespace {

std::string first_words(const std::string& text, size_t words) {
  std::string out;
  size_t count = 0;
  bool in_word = false;
  for (char c : text) {
    bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
    if (!space && !in_word && ++count > words) break;
    in_word = !space;
    out += space ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ')
    out.pop_back();
  return out;
}

void list_models(const Endpoint& endpoint, const std::string& key, HttpTransport& transport,
                 RetryClock& clock, EndpointProbe& probe) {
  HttpRequest request{"GET", endpoint_url(endpoint, "models"),   request_headers(key, false),
                      "",    std::min(endpoint.timeout_s, 30.0), 10};
  double start = clock.now_s();
  HttpResponse response = transport.send(request);
  probe.models_s = clock.now_s() - start;
  Redactor redactor(key);
  if (response.failure != TransportFailure::none) {
    probe.models_error = redactor.redact(response.failure_message);
    return;
  }
  nlohmann::json body = nlohmann::json::parse(response.body, nullptr, false);
  if (response.status != 200 || !body.is_object() || !body.contains("data") ||
      !body["data"].is_array()) {
    probe.models_error =
        redactor.redact(fmt::format("HTTP {}: {:.200}", response.status, response.body));
    return;
  }
  for (const auto& item : body["data"])
    if (std::string id = string_or(item, "id"); !id.empty()) probe.models.push_back(id);
}

}  // namespace

EndpointProbe probe_endpoint(const Endpoint& endpoint, const std::string& model,
                             HttpTransport& transport, RetryClock& clock) {
  EndpointProbe probe;
  probe.api_base = endpoint.api_base;
  Result<std::string> key = read_api_key(endpoint);
  if (!key.ok()) {
    probe.models_error = probe.completion_error = key.error().message;
    return probe;
  }
  list_models(endpoint, *key, transport, clock, probe);
  probe.model = !model.empty() ? model : probe.models.empty() ? "" : probe.models.front();
  if (probe.model.empty()) {
    probe.completion_error = "no model to ask: none given and /models listed none";
    return probe;
  }
  Endpoint once = endpoint;
  once.max_retries = 0;
  once.timeout_s = std::min(endpoint.timeout_s, 60.0);
  HttpChatClientOptions options;
  options.role = "doctor";
  options.transport = &transport;
  options.clock = &clock;
  HttpChatClient client(once, options);
  ChatRequest request;
  request.model = probe.model;
  request.messages.push_back(text_message(Role::user, "Say hello in three words."));
  request.max_tokens = 8;
  request.stream = false;
  double start = clock.now_s();
  Result<ChatReply> reply = client.complete(request);
  probe.completion_s = clock.now_s() - start;
  if (reply.ok())
    probe.reply_start = first_words(reply->content, 8);
  else
    probe.completion_error = reply.error().message;
  return probe;
}

}  // namespace stitch::llm
