// The LLM roles' configuration: the TOML reader, the flags over it, the check (config.h).
#include "llm/config.h"

// toml++ header-only and without exceptions: parse errors come back as values, and the installed
// binary needs no libtomlplusplus.so.
#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>

#include "util/fs.h"

namespace stitch::llm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// What a role section or [defaults] may set; unset fields keep what is below them.
struct RoleOverlay {
  std::optional<RoleKind> kind;
  std::optional<std::string> api_base, api_key_env, model, reasoning_effort;
  std::optional<double> timeout_s, temperature;
  std::optional<int64_t> max_retries, max_tokens, samples;
};

constexpr std::array<std::string_view, 10> kRoleKeys = {
    "kind",  "api_base",    "api_key_env", "timeout_s",        "max_retries",
    "model", "temperature", "max_tokens",  "reasoning_effort", "samples"};
constexpr std::array<std::string_view, 2> kPriceKeys = {"prompt_usd_per_million",
                                                        "completion_usd_per_million"};
// Field names that would hold a secret: the key goes in an environment variable, never here.
constexpr std::array<std::string_view, 10> kSecretKeys = {
    "api_key", "apikey", "key",      "token",         "api_token",
    "secret",  "bearer", "password", "authorization", "access_token"};
constexpr std::array<std::string_view, 5> kEfforts = {"none", "minimal", "low", "medium", "high"};

template <size_t N>
bool contains(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

template <size_t N>
std::string join(const std::array<std::string_view, N>& names) {
  std::string text;
  for (std::string_view name : names)
    text += (text.empty() ? "" : ", ") + std::string(name);
  return text;
}

bool is_env_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// The one range rule per numeric or enumerated field, shared by the file and the flags; empty
// when `value` is acceptable, else what is wrong.
std::string numeric_problem(std::string_view key, double value) {
  if (key == "timeout_s" && !(value > 0)) return "timeout_s must be above 0";
  if (key == "max_retries" && (value < 0 || value > 20)) return "max_retries must be 0..20";
  if (key == "temperature" && (value < 0 || value > 2)) return "temperature must be 0..2";
  if (key == "max_tokens" && value < 1) return "max_tokens must be at least 1";
  if (key == "samples" && (value < 1 || value > 64)) return "samples must be 1..64";
  if (key.ends_with("_usd_per_million") && value < 0) return std::string(key) + " must be >= 0";
  return "";
}

std::string effort_problem(std::string_view effort) {
  if (contains(kEfforts, effort)) return "";
  return fmt::format("reasoning_effort '{}' is not one of {}", effort, join(kEfforts));
}

std::string api_key_env_problem(std::string_view name) {
  if (name.empty() || is_env_name(name)) return "";
  return fmt::format(
      "api_key_env must name an environment variable (e.g. OPENAI_API_KEY), not hold the key "
      "itself: '{}' is not a variable name",
      name.size() > 8 ? std::string(name.substr(0, 4)) + "…" : std::string(name));
}

std::string secret_key_problem(std::string_view key) {
  return fmt::format(
      "'{}': the API key itself never goes in a config file; export it in an environment "
      "variable and name that variable with api_key_env",
      key);
}

// Reads one TOML document, naming every problem by FILE:LINE:COLUMN.
class TomlReader {
 public:
  explicit TomlReader(std::string source) : source_(std::move(source)) {}

  Error at(const toml::source_region& where, const std::string& what) const {
    return make_error(ErrorKind::bad_input, "{}:{}:{}: {}", source_, where.begin.line,
                      where.begin.column, what);
  }

  Result<std::string> string_of(const toml::key& key, const toml::node& node) const {
    if (auto value = node.value_exact<std::string>()) return *value;
    return at(node.source(), fmt::format("{} must be a string", key.str()));
  }

  Result<double> number_of(const toml::key& key, const toml::node& node) const {
    std::optional<double> value;
    if (node.is_integer()) value = static_cast<double>(*node.value_exact<int64_t>());
    if (node.is_floating_point()) value = *node.value_exact<double>();
    if (!value) return at(node.source(), fmt::format("{} must be a number", key.str()));
    if (std::string problem = numeric_problem(key.str(), *value); !problem.empty())
      return at(node.source(), problem);
    return *value;
  }

  Result<int64_t> integer_of(const toml::key& key, const toml::node& node) const {
    if (!node.is_integer())
      return at(node.source(), fmt::format("{} must be an integer", key.str()));
    STITCH_ASSIGN_OR_RETURN(double checked, number_of(key, node));
    return static_cast<int64_t>(checked);
  }

  Result<RoleOverlay> role_overlay(const toml::table& table, std::string_view section) const;
  Status read_field(RoleOverlay& overlay, const toml::key& key, const toml::node& node,
                    std::string_view section) const;
  Result<PriceTable> prices(const toml::table& table) const;

 private:
  std::string source_;
};

Status TomlReader::read_field(RoleOverlay& overlay, const toml::key& key, const toml::node& node,
                              std::string_view section) const {
  const std::string name(key.str());
  if (name == "kind") {
    STITCH_ASSIGN_OR_RETURN(std::string text, string_of(key, node));
    std::optional<RoleKind> kind = enum_from_name<RoleKind>(text);
    if (!kind)
      return at(node.source(), fmt::format("kind '{}' is not builtin, llm or hybrid", text));
    if (*kind == RoleKind::hybrid && section != "coder")
      return at(node.source(), fmt::format("kind hybrid is the Coder's only; [{}] may be builtin "
                                           "or llm",
                                           section));
    overlay.kind = kind;
  } else if (name == "api_base" || name == "api_key_env" || name == "model" ||
             name == "reasoning_effort") {
    STITCH_ASSIGN_OR_RETURN(std::string text, string_of(key, node));
    std::string problem = name == "api_key_env"        ? api_key_env_problem(text)
                          : name == "reasoning_effort" ? effort_problem(text)
                                                       : "";
    if (!problem.empty()) return at(node.source(), problem);
    std::optional<std::string>& field = name == "api_base"      ? overlay.api_base
                                        : name == "api_key_env" ? overlay.api_key_env
                                        : name == "model"       ? overlay.model
                                                                : overlay.reasoning_effort;
    field = text;
  } else if (name == "timeout_s" || name == "temperature") {
    STITCH_ASSIGN_OR_RETURN(double value, number_of(key, node));
    (name == "timeout_s" ? overlay.timeout_s : overlay.temperature) = value;
  } else {  // max_retries, max_tokens, samples
    STITCH_ASSIGN_OR_RETURN(int64_t value, integer_of(key, node));
    (name == "max_retries"  ? overlay.max_retries
     : name == "max_tokens" ? overlay.max_tokens
                            : overlay.samples) = value;
  }
  return {};
}

Result<RoleOverlay> TomlReader::role_overlay(const toml::table& table,
                                             std::string_view section) const {
  RoleOverlay overlay;
  for (const auto& [key, node] : table) {
    if (contains(kSecretKeys, key.str())) return at(key.source(), secret_key_problem(key.str()));
    if (!contains(kRoleKeys, key.str()))
      return at(key.source(), fmt::format("unknown key '{}' in [{}] (known: {})", key.str(),
                                          section, join(kRoleKeys)));
    STITCH_TRY(read_field(overlay, key, node, section));
  }
  return overlay;
}

Result<PriceTable> TomlReader::prices(const toml::table& table) const {
  PriceTable prices;
  for (const auto& [model, node] : table) {
    const toml::table* entry = node.as_table();
    if (entry == nullptr)
      return at(node.source(), fmt::format("prices.\"{}\" must be a table with {}", model.str(),
                                           join(kPriceKeys)));
    ModelPrice price;
    for (const auto& [key, value] : *entry) {
      if (!contains(kPriceKeys, key.str()))
        return at(key.source(), fmt::format("unknown key '{}' in [prices.\"{}\"] (known: {})",
                                            key.str(), model.str(), join(kPriceKeys)));
      STITCH_ASSIGN_OR_RETURN(double usd, number_of(key, value));
      (key.str() == "prompt_usd_per_million" ? price.prompt_usd_per_million
                                             : price.completion_usd_per_million) = usd;
    }
    prices[std::string(model.str())] = price;
  }
  return prices;
}

void apply_overlay(RoleConfig& role, const RoleOverlay& overlay) {
  if (overlay.kind) role.kind = *overlay.kind;
  if (overlay.api_base) role.endpoint.api_base = *overlay.api_base;
  if (overlay.api_key_env) role.endpoint.api_key_env = *overlay.api_key_env;
  if (overlay.timeout_s) role.endpoint.timeout_s = *overlay.timeout_s;
  if (overlay.max_retries) role.endpoint.max_retries = static_cast<int>(*overlay.max_retries);
  if (overlay.model) role.model = *overlay.model;
  if (overlay.temperature) role.temperature = overlay.temperature;
  if (overlay.max_tokens) role.max_tokens = overlay.max_tokens;
  if (overlay.reasoning_effort) role.reasoning_effort = overlay.reasoning_effort;
  if (overlay.samples) role.samples = static_cast<int>(*overlay.samples);
}

// The flags' RoleKind for `role`; a bad_input Error for an unknown name or hybrid outside the
// Coder.
Result<RoleKind> kind_from_flag(const std::string& text, LoopRole role) {
  std::optional<RoleKind> kind = enum_from_name<RoleKind>(text);
  const bool coder = role == LoopRole::coder;
  if (!kind || (*kind == RoleKind::hybrid && !coder))
    return make_error(ErrorKind::bad_input, "--{} {}: expected {}", enum_name(role), text,
                      coder ? "builtin, llm or hybrid" : "builtin or llm");
  return *kind;
}

Status flag_check(std::string_view flag, const std::string& problem) {
  if (problem.empty()) return {};
  return make_error(ErrorKind::bad_input, "{}: {}", flag, problem);
}

}  // namespace

std::optional<ModelPrice> LlmConfig::price(const std::string& model) const {
  auto found = prices.find(model);
  if (found == prices.end()) return std::nullopt;
  return found->second;
}

Result<LlmConfig> parse_llm_config(std::string_view toml_text, const std::string& source_name) {
  TomlReader reader(source_name);
  toml::parse_result parsed = toml::parse(toml_text, source_name);
  if (!parsed) return reader.at(parsed.error().source(), std::string(parsed.error().description()));
  const toml::table& document = parsed.table();
  LlmConfig config;
  config.source = source_name;
  RoleOverlay defaults;
  std::array<RoleOverlay, 3> overlays;
  for (const auto& [key, node] : document) {
    const std::string name(key.str());
    if (contains(kSecretKeys, name)) return reader.at(key.source(), secret_key_problem(name));
    const toml::table* table = node.as_table();
    const bool known =
        name == "defaults" || name == "prices" || enum_from_name<LoopRole>(name).has_value();
    if (!known || table == nullptr)
      return reader.at(key.source(),
                       fmt::format("unknown {} '{}' (the file has sections [defaults], "
                                   "[planner], [coder], [verifier] and [prices.\"MODEL\"])",
                                   table ? "section" : "top-level key", name));
    if (name == "prices") {
      STITCH_ASSIGN_OR_RETURN(config.prices, reader.prices(*table));
    } else if (name == "defaults") {
      STITCH_ASSIGN_OR_RETURN(defaults, reader.role_overlay(*table, name));
    } else {
      const auto role = static_cast<size_t>(*enum_from_name<LoopRole>(name));
      STITCH_ASSIGN_OR_RETURN(overlays[role], reader.role_overlay(*table, name));
    }
  }
  for (size_t role = 0; role < overlays.size(); ++role) {
    apply_overlay(config.roles[role], defaults);
    apply_overlay(config.roles[role], overlays[role]);
  }
  return config;
}

Result<LlmConfig> read_llm_config(const fs::path& path) {
  auto text = read_file(path);
  if (!text.ok())
    return make_error(ErrorKind::bad_input, "cannot read the config file {}: {}", path.string(),
                      text.error().message);
  return parse_llm_config(*text, path.string());
}

Status apply_llm_flags(LlmConfig& config, const LlmFlags& flags) {
  const std::array<const std::optional<std::string>*, 3> kinds = {&flags.planner, &flags.coder,
                                                                  &flags.verifier};
  const std::array<const std::optional<std::string>*, 3> models = {
      &flags.planner_model, &flags.coder_model, &flags.verifier_model};
  for (size_t index = 0; index < config.roles.size(); ++index) {
    RoleConfig& role = config.roles[index];
    if (*kinds[index]) {
      STITCH_ASSIGN_OR_RETURN(role.kind,
                              kind_from_flag(**kinds[index], static_cast<LoopRole>(index)));
    }
    if (*models[index]) role.model = **models[index];
  }
  if (flags.api_key_env)
    STITCH_TRY(flag_check("--api-key-env", api_key_env_problem(*flags.api_key_env)));
  if (flags.reasoning_effort)
    STITCH_TRY(flag_check("--reasoning-effort", effort_problem(*flags.reasoning_effort)));
  if (flags.temperature)
    STITCH_TRY(flag_check("--temperature", numeric_problem("temperature", *flags.temperature)));
  if (flags.max_tokens)
    STITCH_TRY(flag_check("--max-tokens",
                          numeric_problem("max_tokens", static_cast<double>(*flags.max_tokens))));
  if (flags.samples)
    STITCH_TRY(flag_check("--samples", numeric_problem("samples", *flags.samples)));
  for (RoleConfig& role : config.roles) {
    if (flags.api_base) role.endpoint.api_base = *flags.api_base;
    if (flags.api_key_env) role.endpoint.api_key_env = *flags.api_key_env;
    if (flags.temperature) role.temperature = flags.temperature;
    if (flags.max_tokens) role.max_tokens = flags.max_tokens;
    if (flags.reasoning_effort) role.reasoning_effort = flags.reasoning_effort;
  }
  if (flags.samples) config.role(LoopRole::coder).samples = *flags.samples;
  return {};
}

Status check_llm_config(const LlmConfig& config) {
  const std::string where = config.source.empty() ? "" : " or in " + config.source;
  for (size_t index = 0; index < config.roles.size(); ++index) {
    const RoleConfig& role = config.roles[index];
    const std::string_view name = enum_name(static_cast<LoopRole>(index));
    if (!role.uses_llm()) continue;
    if (role.endpoint.api_base.empty())
      return make_error(ErrorKind::bad_input,
                        "the {} is set to {} but has no api_base: give --api-base URL{} "
                        "(api_base in [{}] or [defaults])",
                        name, enum_name(role.kind), where, name);
    if (role.model.empty())
      return make_error(ErrorKind::bad_input,
                        "the {} is set to {} but has no model: give --{}-model M{} (model in "
                        "[{}] or [defaults])",
                        name, enum_name(role.kind), name, where, name);
    if (std::string problem = api_key_env_problem(role.endpoint.api_key_env); !problem.empty())
      return make_error(ErrorKind::bad_input, "the {}: {}", name, problem);
  }
  return {};
}

Result<LlmConfig> resolve_llm_config(const LlmFlags& flags, const fs::path& working_dir) {
  LlmConfig config;
  std::error_code ec;
  if (!flags.config_file.empty()) {
    STITCH_ASSIGN_OR_RETURN(config, read_llm_config(flags.config_file));
  } else if (const fs::path local = working_dir / kDefaultConfigName;
             fs::is_regular_file(local, ec)) {
    STITCH_ASSIGN_OR_RETURN(config, read_llm_config(local));
  }
  STITCH_TRY(apply_llm_flags(config, flags));
  STITCH_TRY(check_llm_config(config));
  return config;
}

std::vector<std::string> llm_flag_arguments(const LlmFlags& flags, const fs::path& working_dir) {
  std::vector<std::string> args;
  auto add = [&](std::string_view flag, const auto& value) {
    if (value) args.insert(args.end(), {std::string(flag), fmt::format("{}", *value)});
  };
  // A worker may start elsewhere: it gets the file this process reads, named absolutely.
  std::error_code ec;
  if (!flags.config_file.empty())
    args.insert(args.end(), {"--config", (working_dir / flags.config_file).lexically_normal()});
  else if (fs::is_regular_file(working_dir / kDefaultConfigName, ec))
    args.insert(args.end(), {"--config", (working_dir / kDefaultConfigName).string()});
  add("--planner", flags.planner);
  add("--coder", flags.coder);
  add("--verifier", flags.verifier);
  add("--api-base", flags.api_base);
  add("--api-key-env", flags.api_key_env);
  add("--planner-model", flags.planner_model);
  add("--coder-model", flags.coder_model);
  add("--verifier-model", flags.verifier_model);
  add("--samples", flags.samples);
  add("--temperature", flags.temperature);
  add("--max-tokens", flags.max_tokens);
  add("--reasoning-effort", flags.reasoning_effort);
  return args;
}

json llm_config_to_json(const LlmConfig& config) {
  json roles = json::object();
  for (size_t index = 0; index < config.roles.size(); ++index) {
    const RoleConfig& role = config.roles[index];
    json entry = {{"kind", enum_name(role.kind)}};
    if (role.uses_llm()) {
      entry.update({{"api_base", role.endpoint.api_base},
                    {"api_key_env", role.endpoint.api_key_env},
                    {"timeout_s", role.endpoint.timeout_s},
                    {"max_retries", role.endpoint.max_retries},
                    {"model", role.model},
                    {"samples", role.samples}});
      if (role.temperature) entry["temperature"] = *role.temperature;
      if (role.max_tokens) entry["max_tokens"] = *role.max_tokens;
      if (role.reasoning_effort) entry["reasoning_effort"] = *role.reasoning_effort;
    }
    roles[std::string(enum_name(static_cast<LoopRole>(index)))] = entry;
  }
  json prices = json::object();
  for (const auto& [model, price] : config.prices)
    prices[model] = {{"prompt_usd_per_million", price.prompt_usd_per_million},
                     {"completion_usd_per_million", price.completion_usd_per_million}};
  return {{"source", config.source}, {"roles", roles}, {"prices", prices}};
}

ChatRequest request_for_role(const RoleConfig& role) {
  ChatRequest request;
  request.model = role.model;
  request.temperature = role.temperature;
  request.max_tokens = role.max_tokens;
  request.reasoning_effort = role.reasoning_effort;
  return request;
}

}  // namespace stitch::llm
