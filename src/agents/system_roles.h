// The real Verifier and profiler roles of the loop: verify/verifier.h with its real processes
// (nvcc, the sandboxed stitch-runner, the Python judge and baselines) and
// verify/profile/profile_run.h's CUPTI timeline. Built by `run` and `bench` (one per worker); tests
// use the fakes instead.
#pragma once

#include <functional>
#include <optional>

#include "agents/roles.h"
#include "util/process.h"
#include "verify/build/compiler.h"
#include "verify/build/gpu_info.h"
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

// VerifierRole over the real processes.
class SystemCandidateVerifier final : public CandidateVerifier {
 public:
  explicit SystemCandidateVerifier(SystemVerifierConfig config);
  Result<AttemptResult> verify(const VerifyJob& job) override { return role_.verify(job); }
  std::vector<fs::path> compiler_include_dirs() const { return compiler_.include_dirs(); }

 private:
  SystemProcessRunner process_runner_;
  NvccCompiler compiler_;
  ElfLibraryAuditor auditor_;
  SandboxRunnerLauncher runner_;
  PythonJudgeSession judge_;
  PythonBaselineSource baselines_;
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
