// `stitchcuda bench DIR...`: the loop over many tasks, one worker per GPU, into a bench directory:
//   tasks.json     the task list, fixed when the bench is created (what --resume finishes)
//   runs/<level>/  one run directory per task (resumed in place when a bench is resumed)
//   claims/        one file per task a worker has taken (O_EXCL: no task runs twice at once)
//   results.jsonl  one record per finished task (bench/bench_results.h), appended
//   table.md, report.html   rendered from results.jsonl alone (`--report` re-renders)
// Workers beyond the first are child processes of the same binary with CUDA_VISIBLE_DEVICES set,
// each with its own build cache. With one GPU, the CPU-bound work comes first and in parallel
// (capture and first build, `--prepare-jobs`), then every task's baselines in one batch
// (torch.compile warmed side by side, timed one task after another on the idle GPU) into
// baselines/, the bench's own baseline cache, which the loop's verifications then read.
// `--deadline-minutes` stops taking new tasks (for machines lent by the slice); `--resume`
// continues: finished tasks are kept, interrupted ones resume their run from its state.json.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <set>
#include <thread>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "bench/bench_results.h"
#include "bench/bench_summary.h"
#include "bench/html_report.h"
#include "cli/commands.h"
#include "cli/loop_session.h"
#include "cli/task_capture.h"
#include "util/fs.h"
#include "verify/build_cache.h"
#include "verify/feedback.h"
#include "verify/gpu_info.h"
#include "verify/judge_client.h"

namespace stitch::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct BenchCommandOptions {
  std::vector<std::string> dirs;
  std::string out;
  std::string resume;
  std::string report;
  std::string gpus = "1";
  std::string pattern;
  int limit = 0;
  double deadline_minutes = 0;
  int prepare_jobs = -1;  // -1: automatic (half the cores, at most 8, with one worker)
  // Per task: the loop's options, with budgets smaller than `run`'s.
  LoopCommandOptions loop = [] {
    LoopCommandOptions loop;
    loop.max_attempts = 12;
    loop.max_minutes = 20;
    loop.refine_attempts = 6;
    return loop;
  }();
  // Internal: a worker process.
  std::string worker_of;
  int worker_index = 0;
};

struct BenchTask {
  std::string level;
  std::string task;
  std::string file;
  std::string key() const { return level + "/" + task; }
};

// "2026-12-01T02:09:20Z": records and reports say when in ISO 8601, UTC.
std::string utc_now_iso() {
  return fmt::format(
      "{:%Y-%m-%dT%H:%M:%SZ}",
      fmt::gmtime(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now())));
}

std::string claim_name(const BenchTask& task) {
  return task.level + "__" + task.task;
}

Result<std::vector<BenchTask>> collect_tasks(const BenchCommandOptions& options) {
  std::vector<BenchTask> tasks;
  for (const auto& dir_text : options.dirs) {
    // Paths stay as given (relative ones relative to where bench runs), so a bench directory
    // moved to another machine with the checkout resumes there.
    const fs::path dir = fs::path(dir_text).lexically_normal();
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return make_error("{}: not a directory", dir_text);
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.path().extension() == ".py" &&
          (options.pattern.empty() ||
           entry.path().filename().string().find(options.pattern) != std::string::npos))
        files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    fs::path named = fs::absolute(dir).lexically_normal();
    if (named.filename().empty()) named = named.parent_path();  // "level2/" → "level2"
    const std::string level = named.filename().string();
    for (const auto& file : files)
      tasks.push_back({level, run::task_name_from_path(file), file.string()});
  }
  if (options.limit > 0 && static_cast<int>(tasks.size()) > options.limit)
    tasks.resize(options.limit);
  if (tasks.empty()) return make_error("no task files (.py) found");
  return tasks;
}

Result<std::vector<BenchTask>> read_tasks(const fs::path& bench_dir) {
  STITCH_ASSIGN_OR_RETURN(std::string text, read_file(bench_dir / "tasks.json"));
  json doc = json::parse(text, nullptr, false);
  if (!doc.is_object()) return make_error("{}/tasks.json: not valid JSON", bench_dir.string());
  std::vector<BenchTask> tasks;
  for (const auto& item : doc.value("tasks", json::array()))
    tasks.push_back({item.value("level", ""), item.value("task", ""), item.value("file", "")});
  return tasks;
}

// The newest run directory of `task` under runs/<level>/, if any.
std::optional<fs::path> existing_run(const fs::path& bench_dir, const BenchTask& task) {
  std::error_code ec;
  const fs::path level_dir = bench_dir / "runs" / task.level;
  std::optional<fs::path> newest;
  for (const auto& entry : fs::directory_iterator(level_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(task.task + "-", 0) == 0 && (!newest || name > newest->filename().string()))
      newest = entry.path();
  }
  return newest;
}

// level/task of every task results.jsonl has a record of.
std::set<std::string> recorded_keys(const fs::path& bench_dir) {
  std::set<std::string> keys;
  if (auto records = bench::read_results(bench_dir / "results.jsonl"); records.ok())
    for (const auto& record : *records)
      keys.insert(record.key());
  return keys;
}

std::string outcome_of(const agents::RunState& state) {
  using agents::RunEnd;
  switch (state.end) {
    case RunEnd::succeeded:
      return "passed";
    case RunEnd::refused:
      return "refused";
    case RunEnd::no_gpu:
      return "no_gpu";
    case RunEnd::budget_exhausted:
      return "budget_exhausted";
    case RunEnd::infrastructure_error:
      return "infrastructure_error";
    default:
      break;
  }
  // failed: what the last verification of the whole program said; with none, the built-in
  // roles could not produce a program at all (the emitter refused every plan).
  for (auto it = state.attempts.rbegin(); it != state.attempts.rend(); ++it)
    if (it->result && it->result->outcome) return std::string(outcome_name(*it->result->outcome));
  return "refused";
}

bench::BenchRecord record_for(const BenchTask& task, const fs::path& run_dir,
                              const agents::RunState& state, const std::string& gpu,
                              const std::string& track) {
  bench::BenchRecord record;
  record.task = task.task;
  record.level = task.level;
  record.task_file = task.file;
  record.run_dir = run_dir.string();
  record.outcome = outcome_of(state);
  record.reason = state.end_reason.substr(0, 300);
  record.track = track;
  record.gpu = gpu;
  record.attempts = state.used.attempts;
  record.wall_s = state.used.wall_s;
  record.refine_before_ms = state.refine.before_ms;
  record.finished_at = utc_now_iso();
  // The plan's roofline floor (plan.json: the newest plan version), for "% of floor".
  if (auto text = read_file(run_dir / "plan.json"); text.ok()) {
    json plan = json::parse(*text, nullptr, false);
    if (plan.is_object() && plan.value("floor_us", 0.0) > 0)
      record.floor_ms = plan.value("floor_us", 0.0) / 1000.0;
  }
  const agents::AttemptRecord* best = state.best();
  if (best && best->result && best->result->timing) {
    record.ours_ms = best->result->timing->median_ms;
    record.ours_p10_ms = best->result->timing->p10_ms;
    record.ours_p90_ms = best->result->timing->p90_ms;
    for (const auto& [mode, ms] : best->result->baselines_ms)
      record.baselines.push_back({mode, ms});
    // The profile refine took of the first passing program, when there was one.
    for (const auto& attempt : state.attempts)
      if (auto profile = read_profile_summary(run_dir / attempt.dir / "profile.json");
          profile.ok()) {
        for (const auto& kernel : profile->kernels)
          if (record.top_kernels.size() < 6)
            record.top_kernels.push_back({kernel.name, kernel.duration_ms});
        break;
      }
  }
  return record;
}

// Runs (or resumes) one task and appends its record.
void run_bench_task(const fs::path& bench_dir, const BenchTask& task,
                    const BenchCommandOptions& options, const harness::HarnessLocation& location,
                    const std::string& prefix) {
  auto say = [&](const std::string& line) {
    fmt::print(stderr, "{}{}: {}\n", prefix, task.task, line);
  };
  const fs::path runs = bench_dir / "runs" / task.level;
  std::string gpu_name;
  if (auto gpu = query_gpu(0)) gpu_name = gpu->name;
  auto fail = [&](const std::string& outcome, const std::string& reason,
                  const std::string& run_dir) {
    bench::BenchRecord record;
    record.task = task.task;
    record.level = task.level;
    record.task_file = task.file;
    record.run_dir = run_dir;
    record.outcome = outcome;
    record.reason = reason.substr(0, 300);
    record.track = options.loop.track;
    record.gpu = gpu_name;
    record.finished_at = utc_now_iso();
    (void)bench::append_record(bench_dir / "results.jsonl", record);
    say(fmt::format("{} — {}", outcome, record.reason));
  };
  bool resume = false;
  Result<run::RunDir> run = make_error("unset");
  if (auto existing = existing_run(bench_dir, task);
      existing && fs::exists(*existing / "graph.json")) {
    resume = fs::exists(*existing / "state.json");
    run = resume ? run::RunDir::open(*existing) : run::RunDir::open_or_adopt(*existing);
  } else {
    if (existing) fs::remove_all(*existing);  // an interrupted capture: start it again
    bool bad_input = false;
    (void)make_dirs(runs);
    run = capture_task_into_new_run(task.file, runs.string(), location, bad_input);
    if (!run.ok()) return fail("refused", "capture failed: " + run.error().message, "");
  }
  if (!run.ok()) return fail("infrastructure_error", run.error().message, "");

  auto loop = loop_settings(options.loop);
  if (!loop.ok()) return fail("infrastructure_error", loop.error().message, run->root().string());
  LoopSettings settings = *loop;
  settings.worker_id = fmt::format("worker{}", options.worker_index);
  settings.build_cache = default_build_cache_dir() / settings.worker_id;
  settings.export_main = false;  // bench measures; `run` makes deployable folders
  auto outcome = run_loop(*run, settings, resume, location,
                          [&](const agents::WorkflowEvent& event) { say(event.line); });
  if (!outcome.ok())
    return fail("infrastructure_error", outcome.error().message, run->root().string());
  auto record = record_for(task, run->root(), outcome->state, gpu_name, options.loop.track);
  if (Status appended = bench::append_record(bench_dir / "results.jsonl", record); !appended.ok())
    say("error: " + appended.error().message);
}

// Starts `stitchcuda ARGS...` (this binary) as a child process; `in_child` runs between fork and
// exec (environment, output redirection). The child's pid, or -1.
pid_t spawn_self(const std::vector<std::string>& args, const std::function<void()>& in_child) {
  const std::string self = (executable_dir() / "stitchcuda").string();
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  in_child();
  std::vector<std::string> all = {self};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : all)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  ::execv(self.c_str(), argv.data());
  ::_exit(127);
}

// Captures every task not yet recorded or captured, and builds its first program into worker 0's
// build cache, `jobs` child processes at a time (`stitchcuda generate`): the CPU-bound part of the
// loop runs in parallel before the serial, GPU-bound part, which then finds the captures in
// runs/<level>/ and its first build in the cache. Logs go to prepare/.
void prepare(const fs::path& bench_dir, const BenchCommandOptions& options, int jobs) {
  auto tasks = read_tasks(bench_dir);
  if (!tasks.ok() || jobs <= 0) return;
  const std::set<std::string> recorded = recorded_keys(bench_dir);
  std::vector<BenchTask> todo;
  for (const auto& task : *tasks) {
    auto existing = existing_run(bench_dir, task);
    if (!recorded.count(task.key()) && !(existing && fs::exists(*existing / "graph.json")))
      todo.push_back(task);
  }
  if (todo.empty()) return;
  (void)make_dirs(bench_dir / "prepare");
  const fs::path cache = default_build_cache_dir() / "worker0";
  fmt::print(stderr, "preparing {} tasks ({} at a time): capture and first build\n", todo.size(),
             jobs);
  const auto started = std::chrono::steady_clock::now();
  size_t next = 0, running = 0, failed = 0;
  while (next < todo.size() || running > 0) {
    while (running < static_cast<size_t>(jobs) && next < todo.size()) {
      const BenchTask& task = todo[next++];
      const fs::path runs = bench_dir / "runs" / task.level;
      (void)make_dirs(runs);
      const fs::path log = bench_dir / "prepare" / (claim_name(task) + ".log");
      std::vector<std::string> args = {"generate",    task.file,       "--runs-dir",
                                       runs.string(), "--build-cache", cache.string()};
      if (options.loop.strict_fp32_gemm) args.push_back("--strict-fp32-gemm");
      if (!options.loop.arch.empty()) args.insert(args.end(), {"--arch", options.loop.arch});
      const pid_t pid = spawn_self(args, [&] {
        const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
          ::dup2(fd, STDOUT_FILENO);
          ::dup2(fd, STDERR_FILENO);
        }
      });
      if (pid > 0) ++running;
    }
    int status = 0;
    if (::wait(&status) > 0) {
      --running;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
    } else {
      break;  // no children left to wait for
    }
  }
  fmt::print(
      stderr, "prepared {} tasks in {:.0f} s ({} refused or failed to build: the loop says why)\n",
      todo.size(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), failed);
}

// Times the baselines (eager, torch.compile, reduce-overhead) of every captured task that has no
// record yet, in one `judge baseline-batch`: torch.compile is warmed `jobs` tasks at a time on the
// CPU, then each mode is timed in one fresh process going through the tasks on the otherwise idle
// GPU. The results land in the baseline cache (STITCH_BASELINE_CACHE_DIR, set by run_bench to the
// bench's baselines/), where each task's verification finds them instead of starting three
// processes of its own. Tasks already cached are skipped by the batch itself.
void time_baselines(const fs::path& bench_dir, const harness::HarnessLocation& location,
                    int jobs) {
  auto tasks = read_tasks(bench_dir);
  if (!tasks.ok() || !query_gpu(0)) return;  // without a GPU the loop stops before timing
  const std::set<std::string> recorded = recorded_keys(bench_dir);
  // --info-modes '': PyTorch's default-flags eager time is information only, and would cost one
  // more pass over every task.
  std::vector<std::string> args = {"baseline-batch", "--out-dir",
                                   (bench_dir / "prepare" / "baselines").string(), "--warm-jobs",
                                   std::to_string(std::max(jobs, 1)), "--info-modes", ""};
  size_t count = 0;
  for (const auto& task : *tasks) {
    auto run = existing_run(bench_dir, task);
    if (recorded.count(task.key()) || !run || !fs::exists(*run / "graph.json")) continue;
    args.insert(args.end(), {"--graph-dir", run->string()});
    ++count;
  }
  if (count == 0) return;
  (void)make_dirs(bench_dir / "prepare");
  const fs::path log = bench_dir / "prepare" / "baselines.log";
  fmt::print(stderr, "timing the baselines of {} tasks in one batch (log: {})\n", count,
             log.string());
  ProcessSpec spec = python_module_spec({location.python, location.python_dir},
                                        "stitch_harness.judge", args);
  spec.stdout_path = bench_dir / "prepare" / "baselines.out";
  spec.stderr_path = log;
  SystemProcessRunner runner;
  const auto started = std::chrono::steady_clock::now();
  auto result = runner.run(spec);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!result.ok())
    fmt::print(stderr, "baselines: {} (each task times its own)\n", result.error().message);
  else
    fmt::print(stderr, "baselines timed in {:.0f} s ({}; a task whose baselines failed times "
               "its own)\n", seconds, result->succeeded() ? "all modes" : result->describe());
}

// Takes tasks (claims/ with O_EXCL) until none is left or the deadline passes.
void work(const fs::path& bench_dir, const BenchCommandOptions& options,
          const harness::HarnessLocation& location, double deadline_epoch_s) {
  auto tasks = read_tasks(bench_dir);
  if (!tasks.ok()) return;
  const std::string prefix = fmt::format("[w{}] ", options.worker_index);
  for (const auto& task : *tasks) {
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    if (deadline_epoch_s > 0 && now >= deadline_epoch_s) {
      fmt::print(stderr, "{}deadline reached: taking no more tasks\n", prefix);
      return;
    }
    const fs::path claim = bench_dir / "claims" / claim_name(task);
    int fd = ::open(claim.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) continue;  // another worker has it, or it is finished
    const std::string who = fmt::format("worker {} pid {}\n", options.worker_index, ::getpid());
    (void)!::write(fd, who.data(), who.size());
    ::close(fd);
    run_bench_task(bench_dir, task, options, location, prefix);
  }
}

Status render_reports(const fs::path& bench_dir) {
  int skipped = 0;
  STITCH_ASSIGN_OR_RETURN(std::vector<bench::BenchRecord> records,
                          bench::read_results(bench_dir / "results.jsonl", &skipped));
  STITCH_TRY(write_file_atomic(bench_dir / "table.md", bench::format_table_markdown(records)));
  bench::HtmlReportOptions html;
  html.title = "StitchCUDA bench — " + bench_dir.filename().string();
  html.generated_at = utc_now_iso();
  STITCH_TRY(
      write_file_atomic(bench_dir / "report.html", bench::render_html_report(records, html)));
  fmt::print("{}", bench::format_table_text(records));
  fmt::print("\n{} tasks{}; table: {}, report: {}\n", records.size(),
             skipped ? fmt::format(" ({} unreadable lines skipped)", skipped) : "",
             (bench_dir / "table.md").string(), (bench_dir / "report.html").string());
  return {};
}

Result<std::vector<int>> parse_gpus(const std::string& text) {
  std::vector<int> gpus;
  if (text == "all") {
    for (int device = 0; query_gpu(device); ++device)
      gpus.push_back(device);
    if (gpus.empty()) gpus.push_back(0);  // no GPU: one worker, every task ends no_gpu
    return gpus;
  }
  if (text.find(',') == std::string::npos) {
    int count = std::atoi(text.c_str());
    if (count < 1 || count > 64)
      return make_error("--gpus {}: a count 1..64, a list 0,1,... or all", text);
    for (int device = 0; device < count; ++device)
      gpus.push_back(device);
    return gpus;
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos)
      return make_error("--gpus {}: '{}' is not a device number", text, item);
    gpus.push_back(std::stoi(item));
    start = end + 1;
  }
  return gpus;
}

int run_bench(const BenchCommandOptions& options) {
  if (!options.report.empty()) {
    Status rendered = render_reports(options.report);
    if (!rendered.ok()) fmt::print(stderr, "error: {}\n", rendered.error().message);
    return rendered.ok() ? kExitOk : kExitFailure;
  }
  auto location = harness::locate_harness();
  if (!location.ok()) {
    fmt::print(stderr, "error: {}\n", location.error().message);
    return kExitFailure;
  }
  const double deadline =
      options.deadline_minutes > 0
          ? std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                    .count() +
                options.deadline_minutes * 60
          : 0;
  if (!options.worker_of.empty()) {  // a worker process
    work(options.worker_of, options, *location, deadline);
    return kExitOk;
  }
  if (options.dirs.empty() == options.resume.empty()) {
    fmt::print(stderr,
               "error: give task directories or --resume BENCH_DIR (or --report BENCH_DIR)\n");
    return kExitBadInput;
  }
  auto gpus = parse_gpus(options.gpus);
  if (!gpus.ok()) {
    fmt::print(stderr, "error: {}\n", gpus.error().message);
    return kExitBadInput;
  }
  fs::path bench_dir;
  if (!options.resume.empty()) {
    bench_dir = fs::absolute(options.resume);
    if (!fs::exists(bench_dir / "tasks.json")) {
      fmt::print(stderr, "error: {}: not a bench directory (no tasks.json)\n", options.resume);
      return kExitBadInput;
    }
    // Claims of tasks without a record were interrupted: free them so they resume.
    auto records = bench::read_results(bench_dir / "results.jsonl");
    std::set<std::string> done;
    if (records.ok())
      for (const auto& record : *records)
        done.insert(record.level + "__" + record.task);
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(bench_dir / "claims", ec))
      if (!done.count(entry.path().filename().string())) fs::remove(entry.path(), ec);
  } else {
    auto tasks = collect_tasks(options);
    if (!tasks.ok()) {
      fmt::print(stderr, "error: {}\n", tasks.error().message);
      return kExitBadInput;
    }
    bench_dir = fs::absolute(options.out.empty()
                                 ? fs::path("bench") /
                                       run::format_timestamp(std::chrono::system_clock::now())
                                 : fs::path(options.out));
    if (fs::exists(bench_dir / "tasks.json")) {
      fmt::print(stderr, "error: {} already holds a bench; continue it with --resume\n",
                 bench_dir.string());
      return kExitBadInput;
    }
    json list = json::array();
    for (const auto& task : *tasks)
      list.push_back({{"level", task.level}, {"task", task.task}, {"file", task.file}});
    for (Status made :
         {make_dirs(bench_dir / "claims"), make_dirs(bench_dir / "runs"),
          write_file_atomic(bench_dir / "tasks.json",
                            json{{"tasks", list}, {"track", options.loop.track}}.dump(2) + "\n")})
      if (!made.ok()) {
        fmt::print(stderr, "error: {}\n", made.error().message);
        return kExitFailure;
      }
  }
  (void)make_dirs(bench_dir / "claims");
  // The bench's baselines are timed within the bench and kept with it (so a bench resumed on
  // another machine of the same GPU reuses them); an explicit STITCH_BASELINE_CACHE_DIR wins.
  // Workers and the harness processes inherit it.
  ::setenv("STITCH_BASELINE_CACHE_DIR", (bench_dir / "baselines").c_str(), /*overwrite=*/0);
  fmt::print(stderr, "bench {} on {} worker(s)\n", bench_dir.string(), gpus->size());

  // Worker 0 runs here when it is the only one, on device 0; otherwise every worker is a child
  // process pinned to its GPU (CUDA_VISIBLE_DEVICES must be set before CUDA starts).
  const bool in_process = gpus->size() == 1 && (*gpus)[0] == 0;
  // Preparing fills worker 0's build cache: worth it when worker 0 takes every task.
  const int prepare_jobs =
      options.prepare_jobs >= 0 ? options.prepare_jobs
      : gpus->size() == 1
          ? std::clamp(static_cast<int>(std::thread::hardware_concurrency()) / 2, 1, 8)
          : 0;
  if (gpus->size() == 1) {
    prepare(bench_dir, options, prepare_jobs);
    time_baselines(bench_dir, *location, prepare_jobs);
  }
  std::vector<pid_t> children;
  for (size_t i = in_process ? 1 : 0; i < gpus->size(); ++i) {
    std::vector<std::string> args = {"bench", "--worker-of", bench_dir.string(), "--worker-index",
                                     std::to_string(i)};
    for (auto& arg : loop_arguments(options.loop))
      args.push_back(arg);
    if (options.deadline_minutes > 0)
      args.insert(args.end(), {"--deadline-minutes", fmt::format("{}", options.deadline_minutes)});
    const std::string device = std::to_string((*gpus)[i]);
    const pid_t pid =
        spawn_self(args, [&] { ::setenv("CUDA_VISIBLE_DEVICES", device.c_str(), 1); });
    if (pid > 0) children.push_back(pid);
  }
  if (in_process) work(bench_dir, options, *location, deadline);
  for (pid_t child : children) {
    int status = 0;
    ::waitpid(child, &status, 0);
  }

  Status rendered = render_reports(bench_dir);
  if (!rendered.ok()) {
    fmt::print(stderr, "error: {}\n", rendered.error().message);
    return kExitFailure;
  }
  auto tasks = read_tasks(bench_dir);
  auto records = bench::read_results(bench_dir / "results.jsonl");
  if (tasks.ok() && records.ok() && records->size() < tasks->size()) {
    fmt::print(stderr, "{} of {} tasks still to run: stitchcuda bench --resume {}\n",
               tasks->size() - records->size(), tasks->size(), bench_dir.string());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

CommandAction setup_bench(CLI::App& app) {
  auto options = std::make_shared<BenchCommandOptions>();
  app.description(
      "The loop over every task (.py) in the given directories (a directory's name is the task's "
      "level), one worker per GPU. Writes BENCH_DIR/results.jsonl, table.md and a self-contained "
      "report.html; resumable (--resume), re-renderable without re-running (--report).");
  app.add_option("dirs", options->dirs, "Directories of task files (.py)");
  app.add_option("--out", options->out, "The bench directory (default bench/<timestamp>)");
  app.add_option("--resume", options->resume, "Continue the bench in this directory");
  app.add_option("--report", options->report, "Only re-render table.md and report.html of a bench");
  app.add_option("--gpus", options->gpus, "Workers: a GPU count, a list (0,2,3) or all")
      ->capture_default_str();
  app.add_option("--pattern", options->pattern, "Only task files whose name contains this");
  app.add_option("--limit", options->limit, "At most this many tasks (first by name)");
  app.add_option("--deadline-minutes", options->deadline_minutes,
                 "Take no new task after this many minutes (resume later)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--prepare-jobs", options->prepare_jobs,
                 "Tasks captured and first-built in parallel before the GPU loop (default: half "
                 "the cores, at most 8, with one GPU; 0: off)")
      ->check(CLI::Range(-1, 64));
  add_loop_options(app, options->loop);
  app.add_option("--worker-of", options->worker_of, "(internal) run as a worker of this bench")
      ->group("");
  app.add_option("--worker-index", options->worker_index, "(internal) this worker's index")
      ->group("");
  return [options]() -> int { return run_bench(*options); };
}

}  // namespace stitch::cli
