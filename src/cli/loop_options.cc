// The loop's options on the command line (loop_options.h).
#include "cli/loop_options.h"

#include "cli/common_options.h"
#include "cli/llm_options.h"

namespace stitch::cli {

void add_loop_options(CLI::App& app, app::LoopOptions& options) {
  add_track_option(app, options.track);
  app.add_option("--arch", options.arch, "nvcc target (default: the GPU's, else sm_90)");
  app.add_option("--max-attempts", options.max_attempts, "Verifications in all (budget)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_option("--max-minutes", options.max_minutes, "Wall-time budget (0: none)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-replans", options.max_replans, "Plans abandoned before the run fails")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  app.add_option("--refine-attempts", options.refine_attempts, "Refine candidates tried at most")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  app.add_flag("--no-refine", options.no_refine, "Stop at the first verified program");
  app.add_flag("--strict-fp32-gemm", options.strict_fp32_gemm,
               "Plan every GEMM (and fused attention) in strict FP32 from the start (no "
               "split-precision 3xTF32)");
  add_verification_options(app, options.sets, options.iters, options.timeout_s);
  add_insecure_sandbox_option(app, options.insecure_sandbox);
  app.add_option("--hybrid-hot", options.hybrid_hot,
                 "--coder hybrid: how many of the slowest built-in subtasks (by the profile of an "
                 "earlier attempt) the LLM rewrites besides the ones the built-in Coder refuses")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  add_llm_options(app, options.llm);
}

}  // namespace stitch::cli
