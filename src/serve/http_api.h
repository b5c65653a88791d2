// The service on HTTP (cpp-httplib), docs/serve.md "API":
//   POST /v1/score          blocking: 200 with the final reply, 202 if it is not final in time
//   POST /v1/submit         202 with status queued (200 when a repeated id is already final)
//   GET  /v1/requests/{id}  200 with the current reply, 404 when unknown
//   GET  /healthz           {status: ok | draining, workers, queue_depth, in_flight}
//   GET  /metrics           Prometheus text
// Every /v1 reply is a reply_to_json document (the same keys in every reply, refusals included).
// /v1 needs `Authorization: Bearer <token>` unless auth is off; health and metrics never do.
// Refusals: 400 bad body, 401 token, 409 id reused with another candidate, 429 queue full and 503
// shutting down / store failure, both with Retry-After.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "serve/service.h"
#include "util/result.h"

namespace httplib {
class Server;
}

namespace stitch::serve {

struct ApiOptions {
  std::string token;  // the bearer token; empty with require_auth: every /v1 call is 401
  bool require_auth = true;
  int retry_after_s = 5;      // Retry-After on 429 and 503
  double max_block_s = 3600;  // the longest a blocking call waits (its timeout_s, capped)
  size_t max_body_bytes = 4 << 20;
  int http_threads = 64;  // concurrent connections served; more wait for a free thread
};

// Equal strings in time that depends on their lengths only, not on where they differ.
bool constant_time_equal(std::string_view a, std::string_view b);

class HttpServer {
 public:
  HttpServer(ScoreService& service, ApiOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds `host`:`port` (0: a free port) and returns the port.
  Result<int> bind(const std::string& host, int port);
  // Serves until stop(); call after bind.
  void run();
  void stop();

 private:
  void install_routes();
  ScoreService& service_;
  ApiOptions options_;
  std::unique_ptr<httplib::Server> server_;
};

}  // namespace stitch::serve
