// stitchcuda-serve: the reward service's own binary (`stitchcuda serve` runs it; serve_proxy.cc
// says why it is separate). Parses serve_command.cc's options and runs app::serve.
#include "cli/commands.h"
#include "cli/common_options.h"

int main(int argc, char** argv) {
  CLI::App app{"stitchcuda serve: the reward service (docs/serve.md)", "stitchcuda serve"};
  stitch::cli::CommandAction action = stitch::cli::setup_serve(app);
  stitch::cli::TaskLimitOptions task_limits;
  stitch::cli::add_task_limit_options(app, task_limits);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : stitch::cli::kExitBadInput;
  }
  stitch::cli::apply_task_limit_options(task_limits);
  return stitch::cli::exit_code(action());
}
