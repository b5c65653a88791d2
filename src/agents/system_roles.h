// The real Verifier and profiler roles of the loop: verify/verifier.h with its real processes
// (nvcc, the sandboxed stitch-runner, the Python judge and baselines) and
// verify/profile/profile_run.h's CUPTI timeline. Built by `run` and `bench` (one per worker); tests
// use the fakes instead.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "agents/roles.h"
#include "util/process.h"
#include "verify/build/compiler.h"
#include "verify/build/gpu_info.h"
#include "verify/declaration_notes.h"
#include "verify/judge/judge_client.h"
#include "verify/track.h"
#include "verify/verifier.h"

namespace stitch::agents {

struct SystemVerifierConfig {
  PythonLocation python;
  Track track = Track::fp32;
  std::string arch;  // empty: the GPU's
  std::optional<GpuInfo>
      gpu;                // nullopt: no GPU here (every attempt ends no_gpu after static checks)
  VerifyOptions options;  // runner_path, build cache, worker id, sets, iterations, on_step
  // Declarations for compile errors' feedback (declaration_notes.h); nullptr: none attached.
  std::shared_ptr<DeclarationSource> declarations;
};

// The Verifier (verify/verifier.h) as the loop's role, over whatever side effects it is given:
// the real ones (SystemCandidateVerifier) or the Verifier's fakes in tests. Writes verify.json and
// feedback.json and returns attempt_result_from_verify of the two.
class VerifierRole final : public CandidateVerifier {
 public:
  VerifierRole(VerifierDeps deps, SystemVerifierConfig config)
      : deps_(deps), config_(std::move(config)) {}
  Result<AttemptResult> verify(const VerifyJob& job) override;

 private:
  VerifierDeps deps_;
  SystemVerifierConfig config_;
};

// The Verifier's real side effects, owned together: nvcc, the ELF audit, the sandboxed
// stitch-runner, the Python judge and its baselines. The loop's verifier and `verify` use them.
class SystemVerifierDeps {
 public:
  explicit SystemVerifierDeps(const PythonLocation& python)
      : compiler_(process_runner_),
        runner_(process_runner_),
        judge_(python),
        baselines_(python, process_runner_) {}
  SystemVerifierDeps(const SystemVerifierDeps&) = delete;
  SystemVerifierDeps& operator=(const SystemVerifierDeps&) = delete;
  VerifierDeps deps() { return {compiler_, auditor_, runner_, judge_, &baselines_}; }
  const NvccCompiler& compiler() const { return compiler_; }

 private:
  SystemProcessRunner process_runner_;
  NvccCompiler compiler_;
  ElfLibraryAuditor auditor_;
  SandboxRunnerLauncher runner_;
  PythonJudgeSession judge_;
  PythonBaselineSource baselines_;
};

// VerifierRole over the real processes.
class SystemCandidateVerifier final : public CandidateVerifier {
 public:
  explicit SystemCandidateVerifier(SystemVerifierConfig config)
      : system_(config.python), role_(system_.deps(), std::move(config)) {}
  Result<AttemptResult> verify(const VerifyJob& job) override { return role_.verify(job); }
  std::vector<fs::path> compiler_include_dirs() const { return system_.compiler().include_dirs(); }

 private:
  SystemVerifierDeps system_;
  VerifierRole role_;
};

// The CUPTI timeline of one forward (no ncu: refine needs where the time goes, not counters);
// written to the attempt's profile.json. nullopt when it cannot be taken.
class SystemProgramProfiler final : public ProgramProfiler {
 public:
  explicit SystemProgramProfiler(fs::path runner_path) : runner_path_(std::move(runner_path)) {}
  std::optional<ProfileSummary> profile(const fs::path& run_dir, const fs::path& attempt_dir,
                                        const CodeDraft& draft) override;
  const std::string& last_error() const { return last_error_; }

 private:
  fs::path runner_path_;
  SystemProcessRunner process_runner_;
  std::string last_error_;
};

}  // namespace stitch::agents
