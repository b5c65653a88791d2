// The LLM roles' options on the command line (llm/config.h's LlmFlags), declared once for `run`
// and `bench`: --config, the role kinds, the endpoint, the models and the sampling settings. An
// option left out keeps the config file's value.
#pragma once

#include <CLI/CLI.hpp>

#include "llm/config.h"

namespace stitch::cli {

void add_llm_options(CLI::App& app, llm::LlmFlags& flags);

}  // namespace stitch::cli
