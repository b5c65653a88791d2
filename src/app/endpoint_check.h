// `stitchcuda doctor`'s LLM part: probe every configured endpoint (llm/endpoint_probe.h: /models
// and one tiny completion) and report what answered. The endpoints come in as a plain list, so
// whatever configures the roles (flags today, the configuration file once it exists) only has to
// produce EndpointTargets.
#pragma once

#include <string>
#include <vector>

#include "llm/chat.h"
#include "llm/endpoint_probe.h"
#include "llm/http_transport.h"
#include "llm/retry.h"

namespace stitch::app {

struct EndpointTarget {
  std::string roles;  // who uses it ("planner, coder"), for the report; may be empty
  llm::Endpoint endpoint;
  std::string model;  // the one to ask; empty: the first the endpoint lists
};

// The targets of doctor's flags: one per --api-base, all with the same key variable and model.
std::vector<EndpointTarget> endpoint_targets_from_flags(const std::vector<std::string>& api_bases,
                                                        const std::string& api_key_env,
                                                        const std::string& model);

// Targets that share endpoint, key variable and model merged into one (their roles joined), in
// the order they first appear: roles on one server are probed once.
std::vector<EndpointTarget> merge_endpoint_targets(const std::vector<EndpointTarget>& targets);

struct EndpointCheck {
  EndpointTarget target;
  llm::EndpointProbe probe;
};

// Probes each (merged) target in turn.
std::vector<EndpointCheck> check_endpoints(const std::vector<EndpointTarget>& targets,
                                           llm::HttpTransport& transport, llm::RetryClock& clock);

// One line per check: "models a, b (12 ms); m answered \"Hello there\" (0.41 s)" or the errors.
std::string describe_endpoint_check(const EndpointCheck& check);

}  // namespace stitch::app
