#include "llm/http_transport.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>

namespace stitch::llm {

namespace {

using SteadyClock = std::chrono::steady_clock;

struct Transfer {
  HttpResponse* response;
  double stall_timeout_s;
  SteadyClock::time_point last_byte;
  bool stalled = false;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  transfer->response->body.append(data, size * count);
  transfer->last_byte = SteadyClock::now();
  return size * count;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  transfer->last_byte = SteadyClock::now();
  std::string_view line(data, size * count);
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) {
    if (line.starts_with("HTTP/")) transfer->response->headers.clear();  // a new response
    return size * count;
  }
  std::string name(line.substr(0, colon));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
    value.remove_prefix(1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
    value.remove_suffix(1);
  transfer->response->headers.emplace_back(std::move(name), std::string(value));
  return size * count;
}

// libcurl calls this often while bytes flow and about once a second while none do: a transfer
// silent for longer than the stall timeout is aborted (sub-second timeouts in tests included,
// which CURLOPT_LOW_SPEED_TIME's whole seconds cannot express).
int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* transfer = static_cast<Transfer*>(user);
  double silent_s = std::chrono::duration<double>(SteadyClock::now() - transfer->last_byte).count();
  if (silent_s <= transfer->stall_timeout_s) return 0;
  transfer->stalled = true;
  return 1;
}

TransportFailure classify(CURLcode code, bool stalled) {
  switch (code) {
    case CURLE_OK:
      return TransportFailure::none;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
      return TransportFailure::refused;
    case CURLE_OPERATION_TIMEDOUT:
      return TransportFailure::stalled;
    case CURLE_ABORTED_BY_CALLBACK:
      return stalled ? TransportFailure::stalled : TransportFailure::other;
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
      return TransportFailure::dropped;
    default:
      return TransportFailure::other;
  }
}

struct CurlFree {
  void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

}  // namespace

std::optional<std::string> HttpResponse::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (key == name) return value;
  return std::nullopt;
}

CurlTransport::CurlTransport() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

HttpResponse CurlTransport::send(const HttpRequest& request) {
  HttpResponse response;
  std::unique_ptr<CURL, CurlFree> handle(curl_easy_init());
  if (!handle) {
    response.failure = TransportFailure::other;
    response.failure_message = "libcurl could not start a transfer";
    return response;
  }
  std::unique_ptr<curl_slist, CurlFree> headers;
  for (const std::string& header : request.headers)
    headers.reset(curl_slist_append(headers.release(), header.c_str()));
  Transfer transfer{&response, request.stall_timeout_s, SteadyClock::now()};
  char error_text[CURL_ERROR_SIZE] = {};
  CURL* curl = handle.get();
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_text);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
  if (request.method == "POST") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  } else {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  }
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::ceil(request.connect_timeout_s * 1000)));
  CURLcode code = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  response.failure = classify(code, transfer.stalled);
  if (response.failure == TransportFailure::stalled)
    response.failure_message = fmt::format("no byte for {:g} s", request.stall_timeout_s);
  else if (code != CURLE_OK)
    response.failure_message = error_text[0] ? error_text : curl_easy_strerror(code);
  return response;
}

}  // namespace stitch::llm
