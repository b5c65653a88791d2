// `stitchcuda serve`: the reward service (app/serve.h, docs/serve.md). Runs until SIGINT/SIGTERM.
#include <fmt/format.h>

#include "app/serve.h"
#include "cli/commands.h"
#include "cli/common_options.h"

namespace stitch::cli {
namespace {

Result<CommandEnd> run_serve(app::ServeOptions options, const std::vector<std::string>& tasks) {
  for (const std::string& task : tasks) {
    const size_t equals = task.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == task.size())
      return make_error(ErrorKind::bad_input, "--task '{}': expected NAME=PATH", task);
    options.tasks[task.substr(0, equals)] = task.substr(equals + 1);
  }
  options.progress = print_progress;
  STITCH_TRY(app::serve(options));
  return CommandEnd::succeeded;
}

}  // namespace

CommandAction setup_serve(CLI::App& app) {
  auto options = std::make_shared<app::ServeOptions>();
  auto tasks = std::make_shared<std::vector<std::string>>();
  app.add_option("--host", options->host, "Address to bind (default loopback only)")
      ->capture_default_str();
  app.add_option("--port", options->port, "Port (0: a free one, see --port-file)")
      ->capture_default_str();
  app.add_option("--port-file", options->port_file, "Write the bound port here once listening");
  app.add_option("--state-dir", options->state_dir,
                 "requests.db (the durable queue), the token, per-request work folders")
      ->capture_default_str();
  add_runs_dir_option(app, options->runs_dir);
  app.add_option(
      "--token-file", options->token_file,
      "Bearer token file (default $STITCH_SERVE_TOKEN, else STATE_DIR/token, made once)");
  app.add_flag("--no-auth", options->no_auth,
               "Accept requests without a token (anyone reaching the port runs code on the GPUs)");
  app.add_option("--task", *tasks, "A task clients may name: NAME=PATH (repeatable)");
  app.add_option("--tasks-dir", options->tasks_dirs,
                 "A folder of tasks clients may name by file stem (repeatable)")
      ->check(CLI::ExistingDirectory);
  app.add_option("--workers", options->workers, "Scoring workers (default: one per GPU; more share the GPUs round-robin)");
  app.add_option("--queue", options->queue_capacity, "Queued requests before 429")
      ->capture_default_str();
  app.add_option("--timeout", options->default_timeout_s,
                 "A request's time limit, accept to reply, when it names none (s)")
      ->capture_default_str();
  app.add_option("--max-timeout", options->max_timeout_s, "The most a request may ask for (s)")
      ->capture_default_str();
  app.add_option("--grace", options->grace_s,
                 "At SIGTERM/SIGINT, in-flight work gets this long before it is re-queued (s)")
      ->capture_default_str();
  app.add_option("--retry-after", options->retry_after_s, "Retry-After of 429/503 replies (s)")
      ->capture_default_str();
  app.add_option("--http-threads", options->http_threads, "Connections served at once")
      ->capture_default_str();
  app.add_option("--baseline", options->baseline, "The baseline speedups are against")
      ->capture_default_str();
  app.add_option("--verify-arg", options->verify_args,
                 "Passed on to every `stitchcuda verify` (repeatable; e.g. "
                 "--verify-arg=--insecure-sandbox --verify-arg=LAYER)");
  app.add_option("--result-cache", options->result_cache,
                 "Distinct programs whose scores are kept: a candidate identical to one scored "
                 "before (same task, same bytes) gets that score without a second verification; "
                 "0 verifies every request")
      ->capture_default_str();
  app.add_flag("--fake-scorer", options->fake_scorer,
               "Score with the fake scorer (no GPU, nothing verified): tests and load runs");
  app.add_option("--fake-sleep-ms", options->fake_sleep_ms, "The fake scorer's time per request");
  return [options, tasks]() { return run_serve(*options, *tasks); };
}

}  // namespace stitch::cli
