// The real scorer: a candidate verified against its captured task by `stitchcuda verify` (the app
// verify entry, app/verify.h, with its sandbox) run as a child pinned to the worker's GPU, and its
// verify.json turned into a reward. Tasks are resolved from registered names or task folders only
// (a task file is trusted code, so a client may not name an arbitrary path) and captured once per
// task per service run (TaskCache).
//
// The reward is src/reward's combined reward (docs/rubric.md: the rule reward plus the built-in
// judge's rubric shaping) of the verification, the program and the captured reference graph.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "serve/interfaces.h"
#include "serve/rule_reward.h"
#include "verify/verify_report.h"

namespace stitch::serve {

// Which task files a client may name.
struct TaskRegistry {
  std::map<std::string, std::filesystem::path> named;  // --task NAME=PATH
  std::vector<std::filesystem::path> folders;          // --tasks-dir: NAME → DIR/NAME.py
  // A registered name, a folder task's stem ("19_ReLU") or a path to a .py file inside a folder;
  // anything else is bad_input.
  Result<std::filesystem::path> resolve(const std::string& task) const;
};

// Captures each task once (per process); concurrent requests for one task wait for one capture.
class TaskCache {
 public:
  // A task file into a run directory holding its capture.
  using Capture = std::function<Result<std::filesystem::path>(const std::filesystem::path& task)>;
  explicit TaskCache(Capture capture) : capture_(std::move(capture)) {}
  Result<std::filesystem::path> run_dir(const std::filesystem::path& task);
  int captures() const;

 private:
  Capture capture_;
  mutable std::mutex mutex_;
  std::map<std::filesystem::path, std::shared_ptr<std::mutex>> task_locks_;
  std::map<std::filesystem::path, std::filesystem::path> captured_;
  int captures_ = 0;
};

struct VerifyJob {
  std::filesystem::path run_dir;   // the task's capture
  std::filesystem::path program;   // the candidate's .cu
  std::filesystem::path work_dir;  // logs of this verification
  int gpu = 0;
};

// Runs one verification; an Error when none could be made (stopped, the child did not start,
// no verify.json came back). bad_input: the verify entry refused the target or program.
class VerifyLauncher {
 public:
  virtual ~VerifyLauncher() = default;
  virtual Result<VerifyReport> verify(const VerifyJob& job, const CancelToken& cancel,
                                      const Clock& clock) = 0;
};

// `stitchcuda verify RUN_DIR PROGRAM --json EXTRA...` with CUDA_VISIBLE_DEVICES=gpu, stopped (its
// process group) when the token says so.
class ChildVerifyLauncher final : public VerifyLauncher {
 public:
  explicit ChildVerifyLauncher(std::filesystem::path executable,
                               std::vector<std::string> extra_args = {})
      : executable_(std::move(executable)), extra_args_(std::move(extra_args)) {}
  Result<VerifyReport> verify(const VerifyJob& job, const CancelToken& cancel,
                              const Clock& clock) override;

 private:
  std::filesystem::path executable_;
  std::vector<std::string> extra_args_;
};

struct VerifyingScorerOptions {
  std::filesystem::path work_dir;  // one folder per request: program.cu, verify logs
  RuleRewardOptions reward;
  int gpus = 1;  // workers share them round-robin: worker w verifies on GPU w % gpus
};

class VerifyingScorer final : public CandidateScorer {
 public:
  VerifyingScorer(TaskRegistry tasks, TaskCache& cache, VerifyLauncher& launcher,
                  VerifyingScorerOptions options)
      : tasks_(std::move(tasks)),
        cache_(cache),
        launcher_(launcher),
        options_(std::move(options)) {}
  Result<ScoredCandidate> score(const Candidate& candidate, const ScoreContext& context) override;

 private:
  TaskRegistry tasks_;
  TaskCache& cache_;
  VerifyLauncher& launcher_;
  VerifyingScorerOptions options_;
};

// Worker `worker`'s own run directory of a captured task: `verify RUN_DIR` takes the run
// directory's exclusive lock (run/run_lock.h), so workers verifying one task at once each need
// their own. `<run_dir>-gpu<worker>`, made once from the capture's files (hard links where the file
// system allows, else copies; graph.json last, so a half-made one is made again).
Result<std::filesystem::path> worker_run_dir(const std::filesystem::path& run_dir, int worker);

// The reply of one verification: the verdict's keys (rule_reward.h) and src/reward's combined
// reward with its breakdown. Where the rubric cannot be scored, the same formula with a neutral
// rubric (no shaping), its notes saying why.
ScoredCandidate combined_reward(const VerifyReport& report, const std::string& source,
                                const std::filesystem::path& reference_graph,
                                const std::filesystem::path& work,
                                const RuleRewardOptions& options);

// A request id as a folder name: safe characters kept, the rest '_', plus a hash of the whole id.
std::string request_folder_name(const std::string& request_id);

}  // namespace stitch::serve
