// `stitchcuda verify TASK.py|RUN_DIR PROGRAM.cu...`: the Verifier on one program (app/verify.h),
// printing each step as it finishes and the summary. Exit 0 passed, 1 anything else, 2 bad input.
#include <fmt/format.h>

#include "app/verify.h"
#include "cli/build_cache_option.h"
#include "cli/commands.h"
#include "cli/common_options.h"
#include "verify/verify_report.h"

namespace stitch::cli {
namespace {

struct VerifyPrinting {
  bool json = false;
  BuildCacheOption build_cache;
};

void print_report(const app::VerifyProgramResult& result) {
  for (const auto& line : result.report.summary)
    fmt::print("{}\n", line);
  if (!result.feedback.suggestion.text.empty() && !result.report.passed())
    fmt::print("suggestion: {}\n", result.feedback.suggestion.text);
  fmt::print("details: {}\n", (result.attempt / "verify.json").string());
}

Result<CommandEnd> run_verify(app::VerifyProgramOptions options, const VerifyPrinting& printing) {
  options.verify.build_cache_dir = printing.build_cache.resolved();
  options.progress = print_progress;
  options.verify.on_step = [](const VerifyStep& step) {
    fmt::print(stderr, "  {:<14} {:>8.2f} s  {}{}\n", step.name, step.seconds, step.status,
               step.detail.empty() ? "" : "  " + step.detail.substr(0, 120));
  };
  STITCH_ASSIGN_OR_RETURN(app::VerifyProgramResult result, app::verify_program(options));
  if (printing.json)
    fmt::print("{}\n", verify_report_to_json(result.report).dump(2));
  else
    print_report(result);
  return result.report.passed() ? CommandEnd::succeeded : CommandEnd::failed;
}

}  // namespace

CommandAction setup_verify(CLI::App& app) {
  auto options = std::make_shared<app::VerifyProgramOptions>();
  auto printing = std::make_shared<VerifyPrinting>();
  add_target_argument(app, options->target, TargetKinds::task_or_run_dir);
  app.add_option("programs", options->programs, "The program: one or more .cu files")->required();
  add_track_option(app, options->track);
  app.add_option("--arch", options->arch, "nvcc target (default: the GPU's, else sm_90)");
  add_runs_dir_option(app, options->runs_dir);
  add_verification_options(app, options->verify.sets, options->verify.timing_iters,
                           options->verify.runner_timeout_s);
  add_insecure_sandbox_option(app, options->insecure_sandbox);
  app.add_flag("--json", printing->json, "Print verify.json instead of the summary");
  app.add_flag("!--no-baselines", options->verify.baselines,
               "Skip the eager / torch.compile baseline timings (no speedups)");
  app.add_option("-I,--include-dir", options->include_dirs,
                 "Directory searched for the program's quoted #includes (repeatable); headers "
                 "found there are statically checked too")
      ->check(CLI::ExistingDirectory);
  app.add_option("--lib", options->libraries,
                 "Extra library to link (-l); cuBLAS(Lt)/cuDNN/... are detected from #includes");
  app.add_option("--profile", options->profile,
                 "A profile.json (from `stitchcuda profile`) for the feedback");
  printing->build_cache.add_to(
      app, "Build cache directory (default $STITCH_BUILD_CACHE or ~/.cache/stitchcuda/builds)",
      "Build into the attempt directory");
  return [options, printing]() { return run_verify(*options, *printing); };
}

}  // namespace stitch::cli
