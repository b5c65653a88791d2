// The subcommands of `stitchcuda`, one table of name, help and setup function (STYLE.md item 13).
// A setup function declares the subcommand's options on `app` and returns the action to run once
// the command line is parsed; the action returns the process exit code.
#pragma once

#include <functional>
#include <span>

#include <CLI/CLI.hpp>

namespace stitch::cli {

using CommandAction = std::function<int()>;

struct Command {
  const char* name;
  const char* help;
  CommandAction (*setup)(CLI::App& app);
};

std::span<const Command> commands();

CommandAction setup_capture(CLI::App& app);
CommandAction setup_doctor(CLI::App& app);
CommandAction setup_show(CLI::App& app);
CommandAction setup_verify(CLI::App& app);
CommandAction setup_eval_kb(CLI::App& app);
CommandAction setup_profile(CLI::App& app);
CommandAction setup_plan(CLI::App& app);
CommandAction setup_generate(CLI::App& app);
CommandAction setup_run(CLI::App& app);
CommandAction setup_bench(CLI::App& app);

// Exit codes shared by all subcommands.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;   // the work failed (a task did not capture, ...)
inline constexpr int kExitBadInput = 2;  // the input is not what the command takes

}  // namespace stitch::cli
