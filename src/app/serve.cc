// `serve` (serve.h).
#include "app/serve.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "app/task_capture.h"
#include "serve/fake_scorer.h"
#include "serve/http_api.h"
#include "serve/request_store.h"
#include "serve/result_cache.h"
#include "serve/service.h"
#include "serve/verify_scorer.h"
#include "util/fs.h"
#include "verify/build/gpu_info.h"

namespace stitch::app {
namespace fs = std::filesystem;
namespace {

class DriverGpuProbe final : public serve::GpuProbe {
 public:
  int gpu_count() override {
    int count = 0;
    while (query_gpu(count))
      ++count;
    return count;
  }
};

Result<std::string> random_token() {
  unsigned char bytes[24];
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  const bool read_all = fd >= 0 && ::read(fd, bytes, sizeof bytes) == sizeof bytes;
  if (fd >= 0) ::close(fd);
  if (!read_all) return make_error(ErrorKind::machine, "cannot read /dev/urandom for a token");
  std::string token;
  for (unsigned char byte : bytes)
    token += fmt::format("{:02x}", byte);
  return token;
}

// The token: --token-file, else $STITCH_SERVE_TOKEN, else STATE/token (made once, mode 0600).
Result<std::string> load_token(const ServeOptions& options) {
  auto strip = [](std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
      text.pop_back();
    return text;
  };
  if (!options.token_file.empty()) {
    STITCH_ASSIGN_OR_RETURN(std::string text, read_file(options.token_file));
    if (strip(text).empty())
      return make_error(ErrorKind::bad_input, "{}: the token file is empty", options.token_file);
    return strip(text);
  }
  if (const char* env = std::getenv("STITCH_SERVE_TOKEN"); env && *env) return std::string(env);
  const fs::path path = fs::path(options.state_dir) / "token";
  if (auto text = read_file(path); text.ok() && !strip(*text).empty()) return strip(*text);
  STITCH_ASSIGN_OR_RETURN(std::string token, random_token());
  STITCH_TRY(write_file_atomic(path, token + "\n"));
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  say(options.progress, fmt::format("serve: a new bearer token is in {}", path.string()));
  return token;
}

serve::TaskRegistry task_registry(const ServeOptions& options) {
  serve::TaskRegistry registry;
  for (const auto& [name, path] : options.tasks)
    registry.named[name] = fs::absolute(path);
  for (const auto& dir : options.tasks_dirs)
    registry.folders.push_back(fs::absolute(dir));
  return registry;
}

// The scorer and what it owns, kept alive while the service runs.
struct Scoring {
  std::unique_ptr<serve::FakeScorer> fake;
  std::unique_ptr<serve::TaskCache> cache;
  std::unique_ptr<serve::ChildVerifyLauncher> launcher;
  std::unique_ptr<serve::VerifyingScorer> real;
  std::unique_ptr<serve::CachingScorer> cached;  // over `real`, unless --result-cache 0
  serve::CandidateScorer& scorer() {
    if (fake) return *fake;
    if (cached) return *cached;
    return *real;
  }
};

Result<Scoring> make_scoring(const ServeOptions& options, int gpus) {
  Scoring scoring;
  if (options.fake_scorer) {
    scoring.fake = std::make_unique<serve::FakeScorer>(options.fake_sleep_ms);
    return scoring;
  }
  if (options.tasks.empty() && options.tasks_dirs.empty())
    return make_error(ErrorKind::bad_input,
                      "serve: name the tasks it may score (--task, --tasks-dir)");
  TaskCapture capture = system_task_capture(options.runs_dir, options.progress);
  scoring.cache =
      std::make_unique<serve::TaskCache>([capture](const fs::path& task) -> Result<fs::path> {
        STITCH_ASSIGN_OR_RETURN(run::RunDir run, capture(task));
        return run.root();
      });
  scoring.launcher = std::make_unique<serve::ChildVerifyLauncher>(executable_dir() / "stitchcuda",
                                                                  options.verify_args);
  serve::VerifyingScorerOptions scorer_options;
  scorer_options.work_dir = fs::absolute(fs::path(options.state_dir) / "work");
  scorer_options.reward.baseline = options.baseline;
  scorer_options.gpus = gpus;
  scoring.real = std::make_unique<serve::VerifyingScorer>(task_registry(options), *scoring.cache,
                                                          *scoring.launcher, scorer_options);
  if (options.result_cache > 0)
    scoring.cached = std::make_unique<serve::CachingScorer>(*scoring.real, options.result_cache);
  return scoring;
}

// SIGINT/SIGTERM blocked in every thread (call before any starts), so sigwait takes them.
sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

}  // namespace

Status serve(const ServeOptions& options) {
  const sigset_t stop_signals = block_stop_signals();
  STITCH_TRY(make_dirs(options.state_dir));
  std::string token;
  if (options.no_auth) {
    say(options.progress,
        "serve: WARNING: --no-auth: anyone who can reach the port can submit "
        "programs to run on this machine's GPUs");
  } else {
    STITCH_ASSIGN_OR_RETURN(token, load_token(options));
  }
  STITCH_ASSIGN_OR_RETURN(
      auto store, serve::SqliteRequestStore::open(fs::path(options.state_dir) / "requests.db"));
  DriverGpuProbe probe;
  STITCH_ASSIGN_OR_RETURN(Scoring scoring, make_scoring(options, probe.gpu_count()));
  serve::ServiceOptions service_options{
      options.fake_scorer ? std::max(1, options.workers)
                          : serve::worker_count(options.workers, probe),
      options.queue_capacity, options.default_timeout_s, options.max_timeout_s};
  serve::SteadyClock clock;
  serve::ScoreService service(*store, scoring.scorer(), clock, service_options);
  serve::ApiOptions api{token,   !options.no_auth,    options.retry_after_s, options.max_timeout_s,
                        4 << 20, options.http_threads};
  serve::HttpServer http(service, api);
  STITCH_ASSIGN_OR_RETURN(int port, http.bind(options.host, options.port));
  STITCH_ASSIGN_OR_RETURN(size_t requeued, service.start());
  if (!options.port_file.empty())
    STITCH_TRY(write_file_atomic(options.port_file, fmt::format("{}\n", port)));
  say(options.progress,
      fmt::format("serve: listening on http://{}:{} with {} worker(s){}; {} "
                  "request(s) re-queued from {}",
                  options.host, port, service_options.workers,
                  options.fake_scorer ? " (fake scorer)" : "", requeued, options.state_dir));
  std::thread listener([&http] { http.run(); });
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  say(options.progress, fmt::format("serve: signal {}: finishing in-flight work (up to {} s)",
                                    signal_number, options.grace_s));
  service.shutdown(options.grace_s);  // polls are still answered meanwhile
  http.stop();
  listener.join();
  say(options.progress, "serve: stopped; unfinished requests stay queued for the next start");
  return {};
}

}  // namespace stitch::app
