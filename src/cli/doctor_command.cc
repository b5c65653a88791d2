// `stitchcuda doctor`: what this machine can do — build CUDA programs (nvcc), run them (a GPU),
// capture tasks (the Python harness with torch) — and what to install when something is missing.
#include <fmt/format.h>

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

}  // namespace

CommandAction setup_doctor(CLI::App& app) {
  return []() -> Result<CommandEnd> {
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

    bool all_ok = true;
    for (const auto& check : checks) {
      fmt::print("{:<4} {:<38} {}\n", check.ok ? "ok" : "--", check.what, check.detail);
      all_ok = all_ok && check.ok;
    }
    return all_ok ? CommandEnd::succeeded : CommandEnd::failed;
  };
}

}  // namespace stitch::cli
