// `serve`: the reward service (src/serve) wired to this machine — the SQLite request store in the
// state folder, the real scorer (`stitchcuda verify` children, one worker per GPU, tasks captured
// once) or the fake one, the HTTP server, and SIGINT/SIGTERM handled as a graceful shutdown.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "app/progress.h"
#include "util/result.h"

namespace stitch::app {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8421;                        // 0: a free port (written to port_file)
  std::string port_file;                  // the bound port, written once listening
  std::string state_dir = "serve-state";  // requests.db, token, work/ (one folder per request)
  std::string runs_dir = "runs";          // task captures
  std::string token_file;  // the bearer token; empty: $STITCH_SERVE_TOKEN, else one is made
  bool no_auth = false;
  int workers = 0;           // 0: one per GPU
  bool fake_scorer = false;  // serve/fake_scorer.h: no GPU, no verification (tests, load runs)
  int fake_sleep_ms = 0;
  size_t result_cache = 4096;  // programs whose scores are kept (serve/result_cache.h); 0: off
  size_t queue_capacity = 256;
  double default_timeout_s = 1800;
  double max_timeout_s = 7200;
  double grace_s = 60;  // in-flight work gets this long at shutdown, then is re-queued
  int retry_after_s = 5;
  int http_threads = 64;
  std::map<std::string, std::string> tasks;  // NAME → task file
  std::vector<std::string> tasks_dirs;
  std::string baseline = "eager";
  std::vector<std::string> verify_args;  // passed on to every `stitchcuda verify`
  ProgressSink progress;
};

// Serves until SIGINT or SIGTERM, then shuts down gracefully. An Error when it cannot start (the
// store, the port, no tasks for the real scorer).
Status serve(const ServeOptions& options);

}  // namespace stitch::app
