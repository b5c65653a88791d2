// `stitchcuda doctor`: what this machine can do — build CUDA programs (nvcc), run them (a GPU),
// capture tasks (the Python harness with torch) — and what to install when something is missing;
// and what each LLM endpoint answers (app/endpoint_check.h).
#include <fmt/format.h>

#include <memory>

#include "app/endpoint_check.h"
#include "cli/commands.h"
#include "harness/harness.h"
#include "util/process.h"

namespace stitch::cli {
namespace {

struct Check {
  std::string what;
  bool ok = false;
  std::string detail;
};

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

Check check_command(ProcessRunner& runner, const std::string& what,
                    const std::vector<std::string>& argv, const std::string& missing_hint) {
  Check check{what, false, ""};
  if (find_in_path(argv.front()).empty()) {
    check.detail = missing_hint;
    return check;
  }
  ProcessSpec spec;
  spec.argv = argv;
  spec.timeout_s = 60;
  auto result = runner.run(spec);
  check.ok = result.ok() && result->succeeded();
  check.detail = result.ok() ? first_line(result->stdout_text.empty() ? result->stderr_text
                                                                      : result->stdout_text)
                             : result.error().message;
  return check;
}

std::vector<Check> machine_checks() {
  SystemProcessRunner runner;
  std::vector<Check> checks;

  Check nvcc = check_command(runner, "nvcc (builds programs)", {"nvcc", "--version"},
                             "not found: install the CUDA toolkit (see README)");
  if (nvcc.ok) {
    ProcessSpec spec;
    spec.argv = {"nvcc", "--version"};
    auto result = runner.run(spec);
    if (result.ok()) {
      auto pos = result->stdout_text.rfind("Build ");
      if (pos != std::string::npos) nvcc.detail = first_line(result->stdout_text.substr(pos));
    }
  }
  checks.push_back(nvcc);
  checks.push_back(check_command(
      runner, "GPU (runs programs)",
      {"nvidia-smi", "--query-gpu=name,compute_cap,memory.total", "--format=csv,noheader"},
      "no NVIDIA GPU here: capture works and CUDA programs compile; verify, profile and eval-kb "
      "need a GPU"));

  Check harness_check{"Python harness (capture, reference)", false, ""};
  auto location = harness::locate_harness();
  if (!location.ok()) {
    harness_check.detail = location.error().message;
  } else {
    ProcessSpec spec;
    spec.argv = {location->python, "-c",
                 "import torch, safetensors; print('torch', torch.__version__, '| CUDA:', "
                 "torch.cuda.is_available())"};
    spec.timeout_s = 120;
    auto result = runner.run(spec);
    harness_check.ok = result.ok() && result->succeeded();
    harness_check.detail = fmt::format(
        "{} — {}", location->python,
        result.ok() ? first_line(harness_check.ok ? result->stdout_text : result->stderr_text)
                    : result.error().message);
    if (!harness_check.ok) harness_check.detail += " (run scripts/setup.sh)";
  }
  checks.push_back(harness_check);

  return checks;
}

// Flags until the configuration file names the roles' endpoints; then its endpoints feed
// app::check_endpoints the same way.
struct EndpointFlags {
  std::vector<std::string> api_bases;
  std::string api_key_env;
  std::string model;
  bool endpoints_only = false;
};

std::vector<Check> endpoint_checks(const EndpointFlags& flags) {
  std::vector<Check> checks;
  auto targets = app::endpoint_targets_from_flags(flags.api_bases, flags.api_key_env, flags.model);
  if (targets.empty()) return checks;
  llm::CurlTransport transport;
  llm::SystemRetryClock clock;
  for (const app::EndpointCheck& check : app::check_endpoints(targets, transport, clock)) {
    std::string what = "LLM " + check.target.endpoint.api_base;
    if (!check.target.roles.empty()) what += " (" + check.target.roles + ")";
    checks.push_back({what, check.probe.ok(), app::describe_endpoint_check(check)});
  }
  return checks;
}

}  // namespace

CommandAction setup_doctor(CLI::App& app) {
  auto flags = std::make_shared<EndpointFlags>();
  app.add_option("--api-base", flags->api_bases,
                 "An OpenAI-compatible endpoint to check (e.g. http://127.0.0.1:8000/v1): GET "
                 "/models and one tiny completion; repeatable");
  app.add_option("--api-key-env", flags->api_key_env,
                 "The environment variable holding the endpoints' API key (never printed)");
  app.add_option("--model", flags->model,
                 "The model to ask for the completion (default: the first the endpoint lists)");
  app.add_flag("--endpoints-only", flags->endpoints_only,
               "Check only the LLM endpoints, not this machine's compiler, GPU and harness");
  return [flags]() -> Result<CommandEnd> {
    std::vector<Check> checks;
    if (!flags->endpoints_only) checks = machine_checks();
    for (Check& check : endpoint_checks(*flags))
      checks.push_back(std::move(check));
    if (checks.empty())
      return make_error(ErrorKind::bad_input, "--endpoints-only needs at least one --api-base");

    bool all_ok = true;
    for (const auto& check : checks) {
      fmt::print("{:<4} {:<38} {}\n", check.ok ? "ok" : "--", check.what, check.detail);
      all_ok = all_ok && check.ok;
    }
    return all_ok ? CommandEnd::succeeded : CommandEnd::failed;
  };
}

}  // namespace stitch::cli
