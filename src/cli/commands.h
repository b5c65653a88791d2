// The subcommands of `stitchcuda`, one table of name, help and setup function (STYLE.md item 13).
// A setup function declares the subcommand's options on `app` and returns the action to run once
// the command line is parsed. An action calls one app function (src/app/) and prints its result;
// it returns whether the work succeeded, or the Error that stopped it. Only main turns either
// into an exit code (exit_code below).
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include <CLI/CLI.hpp>

#include "util/result.h"

namespace stitch::cli {

// How a command that ran to its end ended: its work succeeded, or it did not (a program that failed
// verification, a bench with tasks left, a regression found). What stopped it early is an Error.
enum class CommandEnd : uint8_t { succeeded, failed };
using CommandAction = std::function<Result<CommandEnd>()>;

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
CommandAction setup_dataset(CLI::App& app);
CommandAction setup_rag(CLI::App& app);
CommandAction setup_mcp(CLI::App& app);
CommandAction setup_reward(CLI::App& app);
// stitchcuda: runs stitchcuda-serve (serve_proxy.cc); stitchcuda-serve: its options
// (serve_command.cc). Both only where cpp-httplib and SQLite are installed.
CommandAction setup_serve(CLI::App& app);

// Exit codes shared by all subcommands (README "Exit codes").
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;   // the work failed (a task did not capture, ...)
inline constexpr int kExitBadInput = 2;  // the input is not what the command takes

// The exit code of a command's end: 0 succeeded, 1 failed; an Error is printed ("error: ...") and
// gives 2 when it is bad input, else 1. The one place an ErrorKind becomes an exit code.
int exit_code(const Result<CommandEnd>& end);

// Prints a progress line of an app function (app/progress.h) to stderr.
void print_progress(const std::string& line);

}  // namespace stitch::cli
