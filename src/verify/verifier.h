// The Verifier: one candidate program, from sources to a VerifyReport (verify_report.h) written as
// verify.json into its attempt directory. Steps, each timed and recorded:
//   1. build        Compiler (through BuildCache when a cache directory is given); build.log,
//                   build.json (diagnostics, ptxas report) into the attempt directory
//   2. static       check_sources on every source and local header; audit of the built .so
//   3. (no GPU: stop here, state no_gpu)
//   4. judge start  `judge serve`: model, secret check sets, references, slots.json; meanwhile
//                   the judge's baseline cache is read
//   5. baseline     what the cache lacked is timed (the judge idle), before any candidate code is
//                   loaded anywhere
//   6. runner       stitch-runner on the .so with the judge's slots (runner.json, runner.log)
//   7. comparison   the judge compares what the runner wrote
//   8. judge stop   always, on every path (the process group is killed)
// Outcome mapping (docs/verify-protocol.md): build fails → compile_error; a fatal static finding →
// hacked (the runner never starts); runner killed by its time limit → timeout; runner crash, CUDA
// error, non-zero status → runtime_error; a fatal finding of the runner or judge → hacked; an output
// check fails → wrong; else passed. Failures of the machinery itself (judge does not start, runner
// setup, compiler missing) give state infrastructure_error with no outcome.
//
// Every side effect is behind an interface — Compiler, LibraryAuditor, RunnerLauncher,
// JudgeSession, BaselineSource — so the whole Verifier is tested on a CPU with fakes.
#pragma once

#include <filesystem>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "util/process.h"
#include "util/result.h"
#include "verify/build/compiler.h"
#include "verify/build/gpu_info.h"
#include "verify/checks/static_checks.h"
#include "verify/judge/judge_client.h"
#include "verify/judge/runner_client.h"
#include "verify/track.h"
#include "verify/verify_report.h"

namespace stitch {

class LibraryAuditor {
 public:
  virtual ~LibraryAuditor() = default;
  // An Error when the library cannot be audited (not an ELF library, static cudart).
  virtual Result<std::vector<HackFinding>> audit(const std::filesystem::path& library) = 0;
};

// audit_library (library_audit.h).
class ElfLibraryAuditor final : public LibraryAuditor {
 public:
  Result<std::vector<HackFinding>> audit(const std::filesystem::path& library) override;
};

class RunnerLauncher {
 public:
  virtual ~RunnerLauncher() = default;
  // An Error only when the runner could not be started at all (run_runner's contract).
  virtual Result<RunnerRun> run(const RunnerInvocation& invocation) = 0;
};

// run_runner through a ProcessRunner (the real sandboxed process).
class SandboxRunnerLauncher final : public RunnerLauncher {
 public:
  explicit SandboxRunnerLauncher(ProcessRunner& runner) : runner_(runner) {}
  Result<RunnerRun> run(const RunnerInvocation& invocation) override;

 private:
  ProcessRunner& runner_;
};

struct VerifyRequest {
  std::filesystem::path capture_dir;  // graph.json, weights.safetensors, task.py
  std::filesystem::path attempt_dir;  // everything this verification writes goes here
  std::vector<std::filesystem::path> sources;  // compiled and linked together (.cu, .cc)
  std::vector<std::filesystem::path> headers;  // statically checked only (their includes)
  std::vector<std::filesystem::path> include_dirs;
  std::vector<std::string> libraries;  // -l names: cublas, cublasLt, cudnn, ...
  Track track = Track::fp32;
  std::string arch;            // empty: the GPU's, else sm_90
  std::optional<GpuInfo> gpu;  // nullopt: no CUDA device here (state no_gpu after static checks)
};

struct VerifyOptions {
  int sets = 3;  // correctness input sets drawn by the judge
  int spot_slots = 2;
  int timing_iters = 50;
  int warmup = 5;
  int timing_sets = 4;
  bool baselines = true;
  double build_timeout_s = 300;
  double runner_timeout_s = 120;  // the whole runner; its own per-call limits are derived from it
  double judge_ready_timeout_s = 900;
  double compare_timeout_s = 600;
  double baseline_timeout_s = 3600;
  std::string judge_device = "cuda";
  std::vector<std::string> judge_extra_args;  // tests: --fake-ipc
  std::filesystem::path runner_path;          // stitch-runner
  std::filesystem::path build_cache_dir;      // empty: build into the attempt directory
  std::string worker_id = "verify";
  // Sandbox layers the user accepted running without (--insecure-sandbox): a verdict that would
  // otherwise fail closed (infrastructure_error "sandbox_incomplete: ...") stands, and
  // verify.json's insecure_sandbox names the missing layers.
  sandbox::InsecureLayers insecure_sandbox;
  // Called after every step (progress, events.jsonl).
  std::function<void(const VerifyStep&)> on_step;
  // Called as a step starts, with the name on_step will report it under ("harness_start" covers
  // the judge's start and its references): what is running now, for a live view.
  std::function<void(const std::string&)> on_step_start;
};

struct VerifierDeps {
  Compiler& compiler;
  LibraryAuditor& auditor;
  RunnerLauncher& runner;
  JudgeSession& judge;
  BaselineSource* baselines = nullptr;  // null: no baselines
};

class Verifier {
 public:
  Verifier(VerifierDeps deps, VerifyOptions options) : deps_(deps), options_(std::move(options)) {}

  // The report, also written to attempt_dir/verify.json. An Error only for a request that cannot be
  // acted on (no sources, attempt directory not writable); everything that can go wrong with the
  // program or the machinery is in the report.
  Result<VerifyReport> verify(const VerifyRequest& request);

 private:
  struct Context;
  bool build(Context& context);
  void check_statically(Context& context);
  BaselineRequest baseline_request(const Context& context, bool cache_only) const;
  std::optional<std::future<Result<BaselineReport>>> look_up_baselines(const Context& context);
  void time_baselines(Context& context, std::optional<std::future<Result<BaselineReport>>>& lookup,
                      bool may_time);
  bool start_judge(Context& context);
  bool run_runner_step(Context& context);
  void compare(Context& context);
  void finish(Context& context);

  VerifierDeps deps_;
  VerifyOptions options_;
};

// The -l names a program needs, from the NVIDIA headers its sources include (cublasLt.h →
// cublasLt, cudnn.h → cudnn, ...).
std::vector<std::string> detect_libraries(const std::vector<SourceFile>& sources);

// detect_libraries over the source files and every local header they include, found beside them
// or in `include_dirs` (the project's kernel headers too: kernels/matmul.cuh brings cublasLt.h).
// What generate, verify and profile link, so their build cache keys agree.
std::vector<std::string> detect_program_libraries(const std::vector<std::filesystem::path>& sources,
                                                  const std::vector<std::filesystem::path>& include_dirs);

// The -l names a program links, sorted and unique: those its writer declared (the emitter's
// cublasLt for a matmul, `verify --lib`) and those detect_program_libraries finds. Computed once,
// where the program is made, into its draft / build request; the build, its cache key,
// verify.json's build command and the export all take them from there.
std::vector<std::string> program_link_libraries(
    const std::vector<std::string>& declared, const std::vector<std::filesystem::path>& sources,
    const std::vector<std::filesystem::path>& include_dirs);

// Writes verify.json (summary filled in first when empty) atomically into `attempt_dir`.
Status write_verify_json(const std::filesystem::path& attempt_dir, VerifyReport& report);

}  // namespace stitch
