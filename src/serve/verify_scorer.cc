// The real scorer and its task registry, capture cache and child launcher (verify_scorer.h).
#include "serve/verify_scorer.h"

#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <cctype>
#include <chrono>
#include <thread>

#include "ir/ir.h"
#include "reward/reward.h"
#include "util/child_process.h"
#include "util/fs.h"

namespace stitch::serve {
namespace fs = std::filesystem;
namespace {

bool inside(const fs::path& path, const fs::path& folder) {
  const fs::path relative = path.lexically_relative(folder);
  return !relative.empty() && *relative.begin() != ".." && relative.is_relative();
}

std::string tail(const std::string& text, size_t n) {
  return text.size() <= n ? text : text.substr(text.size() - n);
}

}  // namespace

Result<fs::path> TaskRegistry::resolve(const std::string& task) const {
  if (auto it = named.find(task); it != named.end()) return it->second;
  for (const fs::path& folder : folders) {
    const fs::path root = fs::weakly_canonical(folder);
    const fs::path candidate = fs::weakly_canonical(
        fs::path(task).is_absolute() ? fs::path(task)
                                     : root / (task.ends_with(".py") ? task : task + ".py"));
    std::error_code error;
    if (inside(candidate, root) && fs::is_regular_file(candidate, error)) return candidate;
  }
  return make_error(ErrorKind::bad_input,
                    "unknown task '{}': not a registered name nor a task of the tasks folders",
                    task);
}

Result<fs::path> TaskCache::run_dir(const fs::path& task) {
  std::shared_ptr<std::mutex> task_lock;
  {
    std::lock_guard lock(mutex_);
    if (auto it = captured_.find(task); it != captured_.end()) return it->second;
    auto& slot = task_locks_[task];
    if (!slot) slot = std::make_shared<std::mutex>();
    task_lock = slot;
  }
  std::lock_guard one_capture(*task_lock);
  {
    std::lock_guard lock(mutex_);
    if (auto it = captured_.find(task); it != captured_.end()) return it->second;
    ++captures_;
  }
  STITCH_ASSIGN_OR_RETURN(fs::path run_dir, capture_(task));  // a failure is tried again later
  std::lock_guard lock(mutex_);
  captured_[task] = run_dir;
  return run_dir;
}

int TaskCache::captures() const {
  std::lock_guard lock(mutex_);
  return captures_;
}

Result<VerifyReport> ChildVerifyLauncher::verify(const VerifyJob& job, const CancelToken& cancel,
                                                 const Clock& clock) {
  ChildSpec spec;
  spec.argv = {executable_.string(), "verify", job.run_dir.string(), job.program.string(),
               "--json"};
  spec.argv.insert(spec.argv.end(), extra_args_.begin(), extra_args_.end());
  spec.env["CUDA_VISIBLE_DEVICES"] = std::to_string(job.gpu);
  spec.stdout_path = job.work_dir / "verify.json.out";
  spec.stderr_path = job.work_dir / "verify.log";
  // The service blocks SIGINT/SIGTERM in all its threads (it takes them with sigwait); the child
  // must get them back, or stopping it would wait for SIGKILL.
  spec.child_setup = [] {
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    return pthread_sigmask(SIG_UNBLOCK, &stop_signals, nullptr) == 0;
  };
  STITCH_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::start(spec));
  while (!child.exited()) {
    if (cancel.stop_requested(clock.now_s())) {
      child.stop(0, 2.0);
      return make_error(ErrorKind::work_failed, "verification stopped");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const ProcessResult ended = child.wait();
  const std::string log = read_file(spec.stderr_path).ok() ? *read_file(spec.stderr_path) : "";
  if (ended.exit_code == 2)
    return make_error(ErrorKind::bad_input, "verify refused the request: {}", tail(log, 300));
  auto text = read_file(spec.stdout_path);
  auto doc = text.ok() ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
  if (doc.is_discarded() || !doc.is_object())
    return make_error(ErrorKind::machine, "verify ended ({}) without a report: {}",
                      ended.describe(), tail(log, 300));
  return verify_report_from_json(doc);
}

Result<fs::path> worker_run_dir(const fs::path& run_dir, int worker) {
  const fs::path own = run_dir.string() + fmt::format("-gpu{}", worker);
  std::error_code error;
  if (fs::exists(own / "graph.json", error)) return own;
  STITCH_TRY(make_dirs(own));
  // What the judge reads of a capture (python/stitch_harness/judge_task.py); graph.json last.
  for (const char* name : {"task.py", "capture.json", "weights.safetensors", "graph.json"}) {
    const fs::path from = run_dir / name;
    if (!fs::exists(from, error)) continue;
    fs::remove(own / name, error);
    fs::create_hard_link(from, own / name, error);
    if (error) fs::copy_file(from, own / name, fs::copy_options::overwrite_existing, error);
    if (error)
      return make_error(ErrorKind::machine, "{}: cannot link or copy {}: {}", own.string(), name,
                        error.message());
  }
  return own;
}

std::string request_folder_name(const std::string& request_id) {
  std::string safe;
  for (char c : request_id.substr(0, 64))
    safe +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_') ? c : '_';
  return fmt::format("{}-{:016x}", safe, std::hash<std::string>{}(request_id));
}

Result<ScoredCandidate> VerifyingScorer::score(const Candidate& candidate,
                                               const ScoreContext& context) {
  STITCH_ASSIGN_OR_RETURN(fs::path task, tasks_.resolve(candidate.task));
  STITCH_ASSIGN_OR_RETURN(fs::path captured, cache_.run_dir(task));
  STITCH_ASSIGN_OR_RETURN(fs::path run_dir, worker_run_dir(captured, context.worker));
  const fs::path work = options_.work_dir / request_folder_name(candidate.request_id);
  STITCH_TRY(make_dirs(work));
  STITCH_TRY(write_file_atomic(work / "program.cu", candidate.source));
  STITCH_ASSIGN_OR_RETURN(VerifyReport report,
                          launcher_.verify({run_dir, work / "program.cu", work,
                                            context.worker % std::max(1, options_.gpus)},
                                           context.cancel, context.clock));
  if (report.state == VerifyState::infrastructure_error)
    return make_error(ErrorKind::machine, "verification failed: {}", report.reason);
  ScoredCandidate scored =
      combined_reward(report, candidate.source, captured / "graph.json", work, options_.reward);
  scored.breakdown["work_dir"] = work.string();
  return scored;
}

ScoredCandidate combined_reward(const VerifyReport& report, const std::string& source,
                                const fs::path& reference_graph, const fs::path& work,
                                const RuleRewardOptions& options) {
  // The reply's verdict keys (compiled, correct, speedup, runtimes, error) from the verification.
  ScoredCandidate scored = rule_reward(rule_verdict(report, options.baseline), options);
  reward::AttemptEvidence evidence;
  evidence.attempt_dir = work.string();
  evidence.verify = report;
  evidence.sources = {{"program.cu", source}};
  if (auto graph = ir::load_graph(reference_graph.string()); graph.ok())
    evidence.reference = std::move(*graph);
  else
    evidence.notes.push_back("reference graph: " + graph.error().message);
  reward::RewardOptions reward_options;
  reward_options.baseline = options.baseline;
  reward_options.max_reward = options.r_max;
  auto breakdown = reward::score_attempt(evidence, reward_options);
  if (!breakdown.ok()) {  // the same formula with a neutral rubric (no shaping), saying why
    reward::RubricScores neutral;
    for (size_t d = 0; d < neutral.dimensions.size(); ++d)
      neutral.dimensions[d].dimension = reward::Dimension(d);
    neutral.notes.push_back("rubric not scored: " + breakdown.error().message);
    breakdown = reward::combine_reward(evidence, neutral, reward_options);
  }
  scored.reward = breakdown->reward;
  scored.hacked = scored.hacked || breakdown->hacked;
  scored.breakdown = reward::breakdown_to_json(*breakdown);
  return scored;
}

}  // namespace stitch::serve
