// The LLM roles' configuration (src/llm/config.h): the TOML reader's errors (with FILE:LINE), the
// merge order built-in defaults ← [defaults] ← [role] ← flags, and the check of LLM roles.
#include "llm/config.h"

#include <gtest/gtest.h>

#include "util/fs.h"

namespace stitch::llm {
namespace {

constexpr std::string_view kFile = R"(# two roles on one server, the planner on another
[defaults]
api_base = "http://127.0.0.1:8000/v1"
api_key_env = "LOCAL_KEY"
model = "qwen-32b"
temperature = 0.2
max_tokens = 8192

[planner]
kind = "llm"
api_base = "https://api.example.com/v1"
model = "frontier"
reasoning_effort = "high"
timeout_s = 900

[coder]
kind = "hybrid"
samples = 4
max_retries = 2

[prices."frontier"]
prompt_usd_per_million = 1.25
completion_usd_per_million = 10
)";

LlmConfig parsed(std::string_view text) {
  auto config = parse_llm_config(text, "stitchcuda.toml");
  EXPECT_TRUE(config.ok()) << config.error().message;
  return config.ok() ? *config : LlmConfig{};
}

TEST(LlmConfig, RolesInheritDefaultsAndOverrideThem) {
  const LlmConfig config = parsed(kFile);
  const RoleConfig& planner = config.role(LoopRole::planner);
  EXPECT_EQ(planner.kind, RoleKind::llm);
  EXPECT_EQ(planner.endpoint.api_base, "https://api.example.com/v1");
  EXPECT_EQ(planner.endpoint.api_key_env, "LOCAL_KEY");
  EXPECT_EQ(planner.endpoint.timeout_s, 900);
  EXPECT_EQ(planner.model, "frontier");
  EXPECT_EQ(planner.reasoning_effort, "high");
  EXPECT_EQ(planner.temperature, 0.2);
  const RoleConfig& coder = config.role(LoopRole::coder);
  EXPECT_EQ(coder.kind, RoleKind::hybrid);
  EXPECT_EQ(coder.endpoint.api_base, "http://127.0.0.1:8000/v1");
  EXPECT_EQ(coder.model, "qwen-32b");
  EXPECT_EQ(coder.samples, 4);
  EXPECT_EQ(coder.endpoint.max_retries, 2);
  EXPECT_EQ(coder.max_tokens, 8192);
  EXPECT_FALSE(coder.reasoning_effort);
  const RoleConfig& verifier = config.role(LoopRole::verifier);
  EXPECT_EQ(verifier.kind, RoleKind::builtin);  // no [verifier]: [defaults] has no kind
  EXPECT_EQ(verifier.endpoint.timeout_s, Endpoint{}.timeout_s);
  EXPECT_TRUE(check_llm_config(config).ok());
}

TEST(LlmConfig, PricesGiveTheCostOfUsage) {
  const LlmConfig config = parsed(kFile);
  ASSERT_TRUE(config.price("frontier"));
  EXPECT_DOUBLE_EQ(*cost_usd(config.prices, "frontier", {2'000'000, 100'000, 0}), 2.5 + 1.0);
  EXPECT_FALSE(cost_usd(config.prices, "qwen-32b", {1, 1, 0}));
}

TEST(LlmConfig, NoFileMeansEveryRoleBuiltin) {
  const LlmConfig config = parsed("");
  for (const RoleConfig& role : config.roles)
    EXPECT_EQ(role.kind, RoleKind::builtin);
  EXPECT_TRUE(check_llm_config(config).ok());
}

struct BadFile {
  const char* name;
  const char* text;
  const char* message;  // a part of the error
};
void PrintTo(const BadFile& file, std::ostream* os) {
  *os << file.name;
}

class LlmConfigRejects : public ::testing::TestWithParam<BadFile> {};

TEST_P(LlmConfigRejects, WithFileLineAndWhat) {
  auto config = parse_llm_config(GetParam().text, "cfg.toml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().kind, ErrorKind::bad_input);
  EXPECT_NE(config.error().message.find(GetParam().message), std::string::npos)
      << config.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Table, LlmConfigRejects,
    ::testing::Values(
        BadFile{"syntax", "[coder\nmodel = 1", "cfg.toml:1:"},
        BadFile{"unknown_key", "[coder]\nkind = \"llm\"\ntemprature = 0.1",
                "cfg.toml:3:1: unknown key 'temprature' in [coder]"},
        BadFile{"unknown_section", "[critic]\nmodel = \"m\"",
                "cfg.toml:1:2: unknown section 'critic'"},
        BadFile{"top_level_key", "model = \"m\"", "cfg.toml:1:1: unknown top-level key 'model'"},
        BadFile{"api_key_in_role", "[coder]\napi_key = \"sk-123\"",
                "cfg.toml:2:1: 'api_key': the API key itself never goes in a config file"},
        BadFile{"token_at_top", "token = \"abc\"", "'token': the API key itself never goes"},
        BadFile{"key_as_env_name", "[defaults]\napi_key_env = \"sk-proj-abcdef\"",
                "api_key_env must name an environment variable"},
        BadFile{"hybrid_planner", "[planner]\nkind = \"hybrid\"",
                "kind hybrid is the Coder's only"},
        BadFile{"unknown_kind", "[coder]\nkind = \"gpt\"",
                "kind 'gpt' is not builtin, llm or hybrid"},
        BadFile{"string_number", "[coder]\ntemperature = \"hot\"",
                "cfg.toml:2:15: temperature must be a number"},
        BadFile{"float_samples", "[coder]\nsamples = 2.5", "samples must be an integer"},
        BadFile{"samples_range", "[coder]\nsamples = 0", "samples must be 1..64"},
        BadFile{"negative_timeout", "[defaults]\ntimeout_s = -1", "timeout_s must be above 0"},
        BadFile{"effort", "[coder]\nreasoning_effort = \"max\"", "reasoning_effort 'max' is not"},
        BadFile{"price_key", "[prices.\"m\"]\ninput = 1", "unknown key 'input' in [prices.\"m\"]"},
        BadFile{"price_not_table", "[prices]\nm = 3", "prices.\"m\" must be a table"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(LlmConfig, LlmRoleNeedsApiBaseAndModel) {
  LlmConfig config = parsed("[coder]\nkind = \"llm\"\nmodel = \"m\"");
  Status checked = check_llm_config(config);
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(checked.error().kind, ErrorKind::bad_input);
  EXPECT_NE(checked.error().message.find("coder is set to llm but has no api_base"),
            std::string::npos)
      << checked.error().message;
  config = parsed("[coder]\nkind = \"llm\"\napi_base = \"http://h/v1\"");
  checked = check_llm_config(config);
  ASSERT_FALSE(checked.ok());
  EXPECT_NE(checked.error().message.find("--coder-model M"), std::string::npos);
}

TEST(LlmConfig, FlagsOverrideTheFileForEveryRole) {
  LlmConfig config = parsed(kFile);
  LlmFlags flags;
  flags.coder = "llm";
  flags.verifier = "llm";
  flags.api_base = "http://10.0.0.1:30000/v1";
  flags.coder_model = "trained-32b";
  flags.temperature = 0.7;
  flags.samples = 8;
  ASSERT_TRUE(apply_llm_flags(config, flags).ok());
  EXPECT_EQ(config.role(LoopRole::coder).kind, RoleKind::llm);
  EXPECT_EQ(config.role(LoopRole::coder).model, "trained-32b");
  EXPECT_EQ(config.role(LoopRole::coder).samples, 8);
  EXPECT_EQ(config.role(LoopRole::planner).model, "frontier");  // no --planner-model
  EXPECT_EQ(config.role(LoopRole::planner).samples, 1);         // --samples: the Coder's
  for (const RoleConfig& role : config.roles) {
    EXPECT_EQ(role.endpoint.api_base, "http://10.0.0.1:30000/v1");
    EXPECT_EQ(role.temperature, 0.7);
  }
  EXPECT_EQ(config.role(LoopRole::verifier).kind, RoleKind::llm);
  EXPECT_TRUE(check_llm_config(config).ok());
}

TEST(LlmConfig, BadFlagsAreBadInput) {
  auto rejects = [](auto set, std::string_view message) {
    LlmConfig config;
    LlmFlags flags;
    set(flags);
    Status applied = apply_llm_flags(config, flags);
    ASSERT_FALSE(applied.ok()) << message;
    EXPECT_EQ(applied.error().kind, ErrorKind::bad_input);
    EXPECT_NE(applied.error().message.find(message), std::string::npos) << applied.error().message;
  };
  rejects([](LlmFlags& f) { f.planner = "hybrid"; }, "--planner hybrid: expected builtin or llm");
  rejects([](LlmFlags& f) { f.coder = "gpt"; }, "--coder gpt: expected builtin, llm or hybrid");
  rejects([](LlmFlags& f) { f.api_key_env = "sk-abc-def"; }, "--api-key-env: api_key_env must");
  rejects([](LlmFlags& f) { f.reasoning_effort = "max"; }, "--reasoning-effort:");
  rejects([](LlmFlags& f) { f.samples = 0; }, "--samples: samples must be 1..64");
}

TEST(LlmConfig, ResolveReadsTheWorkingDirectorysFileUnlessOneIsNamed) {
  const auto dir = std::filesystem::temp_directory_path() / "stitch_llm_config_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(write_file_atomic(dir / "stitchcuda.toml", std::string(kFile)).ok());
  auto local = resolve_llm_config({}, dir);
  ASSERT_TRUE(local.ok()) << local.error().message;
  EXPECT_EQ(local->role(LoopRole::coder).kind, RoleKind::hybrid);
  EXPECT_EQ(local->source, (dir / "stitchcuda.toml").string());
  const std::vector<std::string> implicit = {"--config", (dir / "stitchcuda.toml").string()};
  EXPECT_EQ(llm_flag_arguments({}, dir), implicit);  // a worker elsewhere reads the same file

  ASSERT_TRUE(write_file_atomic(dir / "other.toml", "[coder]\nkind = \"llm\"\n").ok());
  LlmFlags flags;
  flags.config_file = (dir / "other.toml").string();
  auto named = resolve_llm_config(flags, dir);
  ASSERT_FALSE(named.ok());  // llm without api_base or model: the check runs after the flags
  EXPECT_NE(named.error().message.find("other.toml"), std::string::npos) << named.error().message;
  flags.api_base = "http://h/v1";
  flags.coder_model = "m";
  EXPECT_TRUE(resolve_llm_config(flags, dir).ok());

  flags.config_file = (dir / "missing.toml").string();
  auto missing = resolve_llm_config(flags, dir);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::bad_input);
  EXPECT_NE(missing.error().message.find("cannot read the config file"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(LlmConfig, FlagArgumentsRoundTripThroughAWorker) {
  LlmFlags flags;
  flags.config_file = "conf/s.toml";
  flags.coder = "llm";
  flags.coder_model = "m";
  flags.samples = 3;
  flags.temperature = 0.5;
  const std::vector<std::string> args = llm_flag_arguments(flags, "/work");
  const std::vector<std::string> expected = {
      "--config", "/work/conf/s.toml", "--coder", "llm",           "--coder-model",
      "m",        "--samples",         "3",       "--temperature", "0.5"};
  EXPECT_EQ(args, expected);
}

TEST(LlmConfig, RecordNamesTheKeyVariableNeverAKey) {
  LlmConfig config = parsed(kFile);
  const nlohmann::json record = llm_config_to_json(config);
  EXPECT_EQ(record["roles"]["planner"]["api_key_env"], "LOCAL_KEY");
  EXPECT_EQ(record["roles"]["verifier"], nlohmann::json({{"kind", "builtin"}}));
  EXPECT_EQ(record["prices"]["frontier"]["completion_usd_per_million"], 10.0);
  const ChatRequest request = request_for_role(config.role(LoopRole::planner));
  EXPECT_EQ(request.model, "frontier");
  EXPECT_EQ(request.reasoning_effort, "high");
  EXPECT_EQ(request.max_tokens, 8192);
}

TEST(LlmConfig, TheDocumentedExampleReads) {
  auto config = read_llm_config(std::filesystem::path(STITCH_SOURCE_DIR) / "docs" /
                                "stitchcuda.example.toml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_TRUE(check_llm_config(*config).ok());
  EXPECT_EQ(config->role(LoopRole::coder).kind, RoleKind::llm);
  EXPECT_EQ(config->role(LoopRole::coder).model, "Qwen/Qwen3-32B");
  EXPECT_EQ(config->role(LoopRole::planner).kind, RoleKind::builtin);
  EXPECT_TRUE(config->price("gpt-5"));
}

}  // namespace
}  // namespace stitch::llm
