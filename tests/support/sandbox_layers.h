// The `sandbox` object of a runner.json whose every required isolation layer is set up
// (sandbox::kRequiredRunnerLayers): what a fake of a passing runner writes, so that the
// orchestrator's fail-closed check (verify/judge/runner_client.h) lets it pass. One place, so a
// change of the required set changes every fake.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "sandbox/layers.h"

namespace stitch::test_support {

// {"layers": [{"name": ..., "set_up": true, "detail": "fake"}, ...]}, compact JSON.
inline std::string complete_sandbox_json() {
  std::vector<sandbox::LayerReport> layers;
  for (sandbox::Layer layer : sandbox::kRequiredRunnerLayers)
    layers.push_back({std::string(enum_name(layer)), true, "fake runner"});
  return nlohmann::json{{"layers", sandbox::layers_to_json(layers)}}.dump();
}

}  // namespace stitch::test_support
