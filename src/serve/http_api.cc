// HttpServer (http_api.h).
#include "serve/http_api.h"

#include <httplib.h>

#include <algorithm>

namespace stitch::serve {
namespace {

int http_status_of(Admission admission, const ScoreReply& reply) {
  switch (admission) {
    case Admission::accepted:
    case Admission::duplicate:
      return is_final(reply.status) ? 200 : 202;
    case Admission::conflict:
      return 409;
    case Admission::queue_full:
      return 429;
    case Admission::shutting_down:
    case Admission::store_failed:
      return 503;
  }
  return 500;
}

void send(httplib::Response& response, int status, const ScoreReply& reply, int retry_after_s) {
  response.status = status;
  if (status == 429 || status == 503)
    response.set_header("Retry-After", std::to_string(retry_after_s));
  response.set_content(reply_to_json(reply).dump(), "application/json");
}

void send_refusal(httplib::Response& response, int status, ErrorCode error, std::string message,
                  int retry_after_s) {
  send(response, status, refused_reply("", error, std::move(message)), retry_after_s);
}

// The bearer token of an Authorization header, or "" when there is none.
std::string bearer_token(const httplib::Request& request) {
  const std::string header = request.get_header_value("Authorization");
  constexpr std::string_view kScheme = "Bearer ";
  if (header.size() <= kScheme.size() || header.compare(0, kScheme.size(), kScheme) != 0) return "";
  return header.substr(kScheme.size());
}

}  // namespace

bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned char difference = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    difference |= static_cast<unsigned char>(x ^ y);
  }
  return difference == 0;
}

HttpServer::HttpServer(ScoreService& service, ApiOptions options)
    : service_(service),
      options_(std::move(options)),
      server_(std::make_unique<httplib::Server>()) {
  const int threads = std::max(1, options_.http_threads);
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server_->set_payload_max_length(options_.max_body_bytes);
  install_routes();
}

HttpServer::~HttpServer() {
  stop();
}

Result<int> HttpServer::bind(const std::string& host, int port) {
  const int bound =
      port == 0 ? server_->bind_to_any_port(host) : (server_->bind_to_port(host, port) ? port : -1);
  if (bound <= 0) return make_error(ErrorKind::machine, "cannot listen on {}:{}", host, port);
  return bound;
}

void HttpServer::run() {
  server_->listen_after_bind();
}

void HttpServer::stop() {
  if (server_) server_->stop();
}

void HttpServer::install_routes() {
  const int retry = options_.retry_after_s;
  server_->set_pre_routing_handler([this, retry](const httplib::Request& request,
                                                 httplib::Response& response) {
    if (request.path.rfind("/v1/", 0) != 0 || !options_.require_auth)
      return httplib::Server::HandlerResponse::Unhandled;
    const std::string token = bearer_token(request);
    if (!options_.token.empty() && constant_time_equal(token, options_.token))
      return httplib::Server::HandlerResponse::Unhandled;
    service_.metrics().refused(ErrorCode::unauthorized);
    response.set_header("WWW-Authenticate", "Bearer");
    send_refusal(response, 401, ErrorCode::unauthorized, "missing or wrong bearer token", retry);
    return httplib::Server::HandlerResponse::Handled;
  });

  auto admit = [this, retry](const httplib::Request& request, httplib::Response& response,
                             bool blocking) {
    auto candidate = candidate_from_json(nlohmann::json::parse(request.body, nullptr, false));
    if (!candidate.ok()) {
      service_.metrics().refused(ErrorCode::bad_request);
      return send_refusal(response, 400, ErrorCode::bad_request, candidate.error().message, retry);
    }
    Admitted admitted = service_.submit(*candidate);
    const bool queued =
        admitted.admission == Admission::accepted || admitted.admission == Admission::duplicate;
    if (blocking && queued && !is_final(admitted.reply.status)) {
      const double timeout = candidate->timeout_s > 0 ? candidate->timeout_s : options_.max_block_s;
      if (auto reply =
              service_.wait(candidate->request_id, std::min(timeout, options_.max_block_s) + 1.0))
        admitted.reply = *reply;
    }
    send(response, http_status_of(admitted.admission, admitted.reply), admitted.reply, retry);
  };
  server_->Post("/v1/score", [admit](const httplib::Request& request, httplib::Response& response) {
    admit(request, response, true);
  });
  server_->Post("/v1/submit",
                [admit](const httplib::Request& request, httplib::Response& response) {
                  admit(request, response, false);
                });
  server_->Get(R"(/v1/requests/([^/]+))", [this, retry](const httplib::Request& request,
                                                        httplib::Response& response) {
    const std::string id = request.matches[1];
    if (auto reply = service_.lookup(id)) return send(response, 200, *reply, retry);
    send(response, 404, refused_reply(id, ErrorCode::not_found, "no request with this id"), retry);
  });
  server_->Get("/healthz", [this](const httplib::Request&, httplib::Response& response) {
    const Gauges gauges = service_.gauges();
    nlohmann::json health = {{"status", gauges.draining ? "draining" : "ok"},
                             {"workers", gauges.workers},
                             {"queue_depth", gauges.queue_depth},
                             {"in_flight", gauges.in_flight}};
    response.status = gauges.draining ? 503 : 200;
    response.set_content(health.dump(), "application/json");
  });
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& response) {
    response.set_content(service_.metrics().prometheus(service_.gauges()),
                         "text/plain; version=0.0.4");
  });
}

}  // namespace stitch::serve
