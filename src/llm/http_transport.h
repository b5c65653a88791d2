// One HTTP exchange, behind an interface (STYLE.md item 10): the chat client and the endpoint
// probe send through HttpTransport; CurlTransport is the real one (libcurl). A transport failure
// is data (TransportFailure), not an Error, because the caller decides which ones to retry.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/enum_names.h"

namespace stitch::llm {

struct HttpRequest {
  std::string method = "POST";  // or "GET"
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  double stall_timeout_s = 600;  // no byte received for this long aborts the exchange
  double connect_timeout_s = 30;
};

// How an exchange failed before a whole response arrived.
enum class TransportFailure : uint8_t {
  none,     // a whole response (of any HTTP status)
  refused,  // nothing listens there (connection refused, host not found)
  stalled,  // no byte for stall_timeout_s
  dropped,  // the connection broke mid-exchange (partial body, reset, empty reply)
  other,    // anything else (TLS, a bad URL)
};
inline constexpr std::array<std::string_view, 5> kTransportFailureNames = {
    "none", "refused", "stalled", "dropped", "other"};
constexpr const auto& enum_names(TransportFailure) { return kTransportFailureNames; }
static_assert(names_every_enumerator(TransportFailure::other));

struct HttpResponse {
  TransportFailure failure = TransportFailure::none;
  std::string failure_message;  // the transport's words, when failure != none
  long status = 0;              // HTTP status (0 when none arrived)
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;  // what arrived, also when the exchange failed part-way

  // The first header of that (lower-case) name.
  std::optional<std::string> header(std::string_view name) const;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  virtual HttpResponse send(const HttpRequest& request) = 0;
};

// libcurl. One easy handle per exchange, so one transport serves many threads at once.
class CurlTransport : public HttpTransport {
 public:
  CurlTransport();
  HttpResponse send(const HttpRequest& request) override;
};

}  // namespace stitch::llm
