// stitchcuda: the thin command-line front end. Subcommands come from the table in commands.cc;
// this file only parses and dispatches, and is the one place an error becomes an exit code.
#include <iostream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/common_options.h"

int main(int argc, char** argv) {
  CLI::App app{
      "StitchCUDA: turn a KernelBench-style PyTorch program into a verified, end-to-end CUDA "
      "program.\n"
      "Run `stitchcuda <command> --help` for a command's options.",
      "stitchcuda"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "stitchcuda 0.1.0");

  std::vector<std::pair<CLI::App*, stitch::cli::CommandAction>> actions;
  stitch::cli::TaskLimitOptions task_limits;
  for (const auto& command : stitch::cli::commands()) {
    CLI::App* sub = app.add_subcommand(command.name, command.help);
    actions.emplace_back(sub, command.setup(*sub));
    stitch::cli::add_task_limit_options(*sub, task_limits);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : stitch::cli::kExitBadInput;
  }
  stitch::cli::apply_task_limit_options(task_limits);
  for (auto& [sub, action] : actions)
    if (sub->parsed()) return stitch::cli::exit_code(action());
  return stitch::cli::kExitBadInput;
}
