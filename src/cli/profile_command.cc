// `stitchcuda profile TASK.py|RUN_DIR PROGRAM.cu`: a program's CUPTI timeline, ncu counters for the
// top kernels and their bottlenecks (app/profile.h), printed as a table; `--reference` profiles
// the task's PyTorch reference instead. Without a GPU it says so and exits 1 before writing
// anything.
#include <fmt/format.h>

#include "app/profile.h"
#include "cli/commands.h"
#include "cli/common_options.h"

namespace stitch::cli {

CommandAction setup_profile(CLI::App& app) {
  auto options = std::make_shared<app::ProfileOptions>();
  auto print_json = std::make_shared<bool>(false);
  add_target_argument(app, options->target, TargetKinds::task_or_run_dir);
  app.add_option("program", options->program,
                 "The program to profile: a CUDA source (.cu, built with the build cache) or a "
                 "built program (.so)");
  app.add_flag("--reference", options->reference,
               "Profile the task's PyTorch reference (torch.profiler) instead of a program");
  app.add_option("--top", options->top, "Kernels (by time) to read ncu counters for")
      ->capture_default_str();
  app.add_flag("--no-ncu", options->no_ncu, "Timeline only: no Nsight Compute counters");
  app.add_flag("--json", *print_json, "Print profile.json instead of the table");
  app.add_option("--runs-dir", options->runs_dir, "Where a task's run directory is created")
      ->capture_default_str();
  app.add_option("--warmup", options->warmup, "Untraced forwards before the traced one")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--arch", options->arch, "nvcc target (default: the GPU's)");
  app.add_option("--peak-tflops", options->peak_tflops,
                 "Peak FP32 TFLOP/s for the roofline (default: the table for the GPU's name)");
  app.add_option("--peak-gbps", options->peak_gbps, "Peak DRAM GB/s for the roofline");
  app.add_option("--timeout", options->timeout_s, "Seconds allowed for the traced run")
      ->capture_default_str();
  app.add_option("--ncu-timeout", options->ncu_timeout_s, "Seconds allowed per ncu run")
      ->capture_default_str();
  app.add_option("--build-cache", options->build_cache,
                 "Build cache directory (default: $STITCH_BUILD_CACHE or ~/.cache/stitchcuda)");
  app.add_option("--track", options->track, "--reference: precision track of the reference")
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}))
      ->capture_default_str();
  options->progress = print_progress;
  return [options, print_json]() -> Result<CommandEnd> {
    STITCH_ASSIGN_OR_RETURN(app::Profiled profiled, app::profile_target(*options));
    if (*print_json)
      fmt::print("{}\n", profiled.document.dump(2));
    else
      fmt::print("{}", format_profile_table(profiled.report));
    fmt::print(stderr, "profile: {}\n", profiled.written.string());
    return CommandEnd::succeeded;
  };
}

}  // namespace stitch::cli
