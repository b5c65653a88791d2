#include "app/endpoint_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace stitch::app {

std::vector<EndpointTarget> endpoint_targets_from_flags(const std::vector<std::string>& api_bases,
                                                        const std::string& api_key_env,
                                                        const std::string& model) {
  std::vector<EndpointTarget> targets;
  for (const std::string& base : api_bases) {
    EndpointTarget target;
    target.endpoint.api_base = base;
    target.endpoint.api_key_env = api_key_env;
    target.model = model;
    targets.push_back(std::move(target));
  }
  return targets;
}

std::vector<EndpointTarget> merge_endpoint_targets(const std::vector<EndpointTarget>& targets) {
  std::vector<EndpointTarget> merged;
  for (const EndpointTarget& target : targets) {
    auto same = std::find_if(merged.begin(), merged.end(), [&](const EndpointTarget& seen) {
      return seen.endpoint.api_base == target.endpoint.api_base &&
             seen.endpoint.api_key_env == target.endpoint.api_key_env && seen.model == target.model;
    });
    if (same == merged.end()) {
      merged.push_back(target);
    } else if (!target.roles.empty()) {
      same->roles += (same->roles.empty() ? "" : ", ") + target.roles;
    }
  }
  return merged;
}

std::vector<EndpointCheck> check_endpoints(const std::vector<EndpointTarget>& targets,
                                           llm::HttpTransport& transport, llm::RetryClock& clock) {
  std::vector<EndpointCheck> checks;
  for (const EndpointTarget& target : merge_endpoint_targets(targets))
    checks.push_back(
        {target, llm::probe_endpoint(target.endpoint, target.model, transport, clock)});
  return checks;
}

std::string describe_endpoint_check(const EndpointCheck& check) {
  const llm::EndpointProbe& probe = check.probe;
  std::string models =
      probe.models_error.empty()
          ? fmt::format("models {} ({:.0f} ms)",
                        probe.models.empty() ? "(none listed)"
                                             : fmt::format("{}", fmt::join(probe.models, ", ")),
                        probe.models_s * 1000)
          : "/models failed: " + probe.models_error;
  std::string completion = probe.completion_error.empty()
                               ? fmt::format("{} answered \"{}\" ({:.2f} s)", probe.model,
                                             probe.reply_start, probe.completion_s)
                               : "completion failed: " + probe.completion_error;
  return models + "; " + completion;
}

}  // namespace stitch::app
