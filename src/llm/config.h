// Which implementation each role of the loop uses (built-in or an LLM) and how its LLM is reached:
// read from a TOML file (stitchcuda.toml in the working directory, or --config FILE), then
// overridden by command-line flags. docs/llm.md documents the file; tests/llm/config_test.cc pins
// the reader and the merge rules.
//
//   [defaults]           every role starts from these (then the built-in defaults below)
//   [planner] [coder] [verifier]   per-role keys override [defaults]
//   [prices."MODEL"]     prompt_usd_per_million, completion_usd_per_million
//
// The API key itself never appears in the file: only the name of the environment variable that
// holds it (api_key_env). A key-looking field is refused.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/chat.h"
#include "llm/prices.h"
#include "util/enum_names.h"
#include "util/result.h"

namespace stitch::llm {

enum class LoopRole : uint8_t { planner, coder, verifier };
inline constexpr std::array<std::string_view, 3> kLoopRoleNames = {"planner", "coder", "verifier"};
constexpr const auto& enum_names(LoopRole) {
  return kLoopRoleNames;
}
static_assert(names_every_enumerator(LoopRole::verifier));

// builtin: no LLM. llm: every step by the LLM. hybrid (the Coder only): the built-in program is
// the starting point and the LLM writes the subtasks the built-in Coder refuses or runs slowest.
enum class RoleKind : uint8_t { builtin, llm, hybrid };
inline constexpr std::array<std::string_view, 3> kRoleKindNames = {"builtin", "llm", "hybrid"};
constexpr const auto& enum_names(RoleKind) {
  return kRoleKindNames;
}
static_assert(names_every_enumerator(RoleKind::hybrid));

struct RoleConfig {
  RoleKind kind = RoleKind::builtin;
  Endpoint endpoint;
  std::string model;
  std::optional<double> temperature;
  std::optional<int64_t> max_tokens;
  std::optional<std::string> reasoning_effort;  // "low" | "medium" | "high"
  int samples = 1;                              // completions per step

  bool uses_llm() const { return kind != RoleKind::builtin; }
};

struct LlmConfig {
  std::array<RoleConfig, 3> roles;  // by LoopRole
  PriceTable prices;
  std::string source;  // the file it was read from; empty: none

  RoleConfig& role(LoopRole which) { return roles[static_cast<size_t>(which)]; }
  const RoleConfig& role(LoopRole which) const { return roles[static_cast<size_t>(which)]; }
  // The price of `model`; nullopt when the table has none.
  std::optional<ModelPrice> price(const std::string& model) const;
};

// Command-line overrides of the file; an unset field keeps the file's value. The global ones
// (api_base, api_key_env, temperature, max_tokens, reasoning_effort) apply to every role; samples
// to the Coder (the only role that samples).
struct LlmFlags {
  std::string config_file;  // --config; empty: ./stitchcuda.toml when it exists
  std::optional<std::string> planner, coder, verifier;  // --planner llm|builtin, ...
  std::optional<std::string> api_base, api_key_env;
  std::optional<std::string> planner_model, coder_model, verifier_model;
  std::optional<int> samples;
  std::optional<double> temperature;
  std::optional<int64_t> max_tokens;
  std::optional<std::string> reasoning_effort;
};

inline constexpr std::string_view kDefaultConfigName = "stitchcuda.toml";

// The file's settings over the built-in defaults. `source_name` names the file in errors, which
// read "FILE:LINE:COLUMN: what" and are bad_input: a TOML syntax error, an unknown section or key,
// a value of the wrong type, a key-looking field.
Result<LlmConfig> parse_llm_config(std::string_view toml_text, const std::string& source_name);
Result<LlmConfig> read_llm_config(const std::filesystem::path& path);

// `flags` over `config` (a bad_input Error for an unknown kind or effort, hybrid outside the
// Coder).
Status apply_llm_flags(LlmConfig& config, const LlmFlags& flags);

// Every role that uses an LLM has an api_base and a model, a valid api_key_env name and sane
// numbers; a bad_input Error naming the role and where to set what is missing.
Status check_llm_config(const LlmConfig& config);

// The whole resolution: the file (flags.config_file, else `working_dir`/stitchcuda.toml when it
// exists, else none), the flags over it, then the check.
Result<LlmConfig> resolve_llm_config(const LlmFlags& flags,
                                     const std::filesystem::path& working_dir);

// The flags as command-line arguments (bench's worker processes get the same configuration): the
// config file named absolutely against `working_dir` — the one --config gives, else
// `working_dir`/stitchcuda.toml when it exists.
std::vector<std::string> llm_flag_arguments(const LlmFlags& flags,
                                            const std::filesystem::path& working_dir);

// The configuration as the run records it (no key: there is none to write).
nlohmann::json llm_config_to_json(const LlmConfig& config);

// The ChatRequest fields a role's configuration fixes (model, temperature, max tokens, effort).
ChatRequest request_for_role(const RoleConfig& role);

}  // namespace stitch::llm
