// The loop's options (app/loop_session.h's LoopOptions) on the command line, shared by `run` and
// `bench`.
#pragma once

#include <CLI/CLI.hpp>

#include "app/loop_session.h"

namespace stitch::cli {

// Declares --track, --arch, the budgets, --sets, --iters, --timeout and the LLM roles' options
// (llm_options.h); the values already in `options` are the defaults shown.
void add_loop_options(CLI::App& app, app::LoopOptions& options);

}  // namespace stitch::cli
