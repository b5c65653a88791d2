// The LLM roles' options on the command line (llm_options.h).
#include "cli/llm_options.h"

#include <optional>
#include <string>

namespace stitch::cli {
namespace {

// An option that sets `field` only when given (CLI11 2.1 has no std::optional options).
template <typename T>
CLI::Option* add_optional(CLI::App& app, const std::string& name, std::optional<T>& field,
                          const std::string& help) {
  return app
      .add_option_function<T>(
          name, [&field](const T& value) { field = value; }, help)
      ->group("LLM roles");
}

}  // namespace

void add_llm_options(CLI::App& app, llm::LlmFlags& flags) {
  app.add_option("--config", flags.config_file,
                 "LLM roles' config file (default: ./stitchcuda.toml when it exists; docs/llm.md)")
      ->check(CLI::ExistingFile)
      ->group("LLM roles");
  add_optional(app, "--planner", flags.planner, "Planner: builtin or llm");
  add_optional(app, "--coder", flags.coder, "Coder: builtin, llm or hybrid");
  add_optional(app, "--verifier", flags.verifier, "Verifier analysis: builtin or llm");
  add_optional(app, "--api-base", flags.api_base,
               "OpenAI-compatible endpoint of every LLM role (e.g. http://127.0.0.1:8000/v1)");
  add_optional(app, "--api-key-env", flags.api_key_env,
               "Environment variable holding the API key (the key itself is never an option)");
  add_optional(app, "--planner-model", flags.planner_model, "The Planner's model");
  add_optional(app, "--coder-model", flags.coder_model, "The Coder's model");
  add_optional(app, "--verifier-model", flags.verifier_model, "The Verifier analysis' model");
  add_optional(app, "--samples", flags.samples, "Coder completions per step (1..64)");
  add_optional(app, "--temperature", flags.temperature, "Sampling temperature of every LLM role");
  add_optional(app, "--max-tokens", flags.max_tokens, "Completion token budget per request");
  add_optional(app, "--reasoning-effort", flags.reasoning_effort,
               "Reasoning models: none, minimal, low, medium or high");
}

}  // namespace stitch::cli
