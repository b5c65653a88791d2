// The layers of a sandbox and what each one reported: the contract between the process that sets a
// sandbox up (stitch-runner's worker, the nvcc child) and the orchestrator that refuses a verdict
// when a layer it requires is missing (fail closed, docs/verify-protocol.md "Sandbox").
//
// Pure data and JSON: no system calls here, so the orchestrator's libraries link it freely.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/enum_names.h"
#include "util/result.h"

namespace stitch::sandbox {

// One isolation layer. `compiler` names the nvcc sandbox as a whole (for --insecure-sandbox).
enum class Layer : uint8_t {
  user,               // unprivileged uid/gid, or a user namespace without capabilities
  no_new_privs,       // PR_SET_NO_NEW_PRIVS
  pid_namespace,      // own PID namespace: no other process visible or signalable
  mount_namespace,    // own mount namespace: a tmpfs root with only the allowed paths
  ipc_namespace,      // own System V IPC and POSIX message queues
  network_namespace,  // own network namespace: no interface but a down loopback
  landlock,           // Landlock rules: write only under the writable dir (defence in depth)
  seccomp,            // the system-call filter (seccomp_filter.h)
  descriptors,        // every inherited descriptor above 2 closed but an explicit keep-list
  compiler,           // the nvcc sandbox (network + mount namespace)
};
inline constexpr std::array<std::string_view, 10> kLayerNames = {
    "user",          "no_new_privs",      "pid_namespace", "mount_namespace",
    "ipc_namespace", "network_namespace", "landlock",      "seccomp",
    "descriptors",   "compiler"};
constexpr const auto& enum_names(Layer) {
  return kLayerNames;
}
static_assert(names_every_enumerator(Layer::compiler));

// What one layer's set-up reported. `name` is a Layer name (kept as text: a newer runner may
// report a layer this build does not know).
struct LayerReport {
  std::string name;
  bool set_up = false;
  std::string detail;  // how it was set up, or why not
};

// The layers a runner must report set up before `passed` is allowed. Landlock is defence in depth:
// reported, not required (kernels before 5.13 lack it).
inline constexpr std::array<Layer, 8> kRequiredRunnerLayers = {
    Layer::user,          Layer::no_new_privs,      Layer::pid_namespace, Layer::mount_namespace,
    Layer::ipc_namespace, Layer::network_namespace, Layer::seccomp,       Layer::descriptors};

// The layers of the nvcc sandbox (verify/build/compiler_sandbox.h).
inline constexpr std::array<Layer, 2> kRequiredCompilerLayers = {Layer::network_namespace,
                                                                 Layer::mount_namespace};

// Layers the user accepted running without (--insecure-sandbox LAYER, repeatable; `all`).
struct InsecureLayers {
  bool all = false;
  std::vector<Layer> layers;
  bool waives(Layer layer) const;
  bool empty() const { return !all && layers.empty(); }
};
// Parses --insecure-sandbox values: layer names or `all`; an Error (bad_input) names an unknown
// one.
Result<InsecureLayers> parse_insecure_layers(const std::vector<std::string>& names);
// The names again, for verify.json and messages ("all" or the layer names).
std::vector<std::string> insecure_layer_names(const InsecureLayers& insecure);

// Required layers that `reports` does not show set up (absent or set_up false), split into those
// the user waived and those that fail the verification closed.
struct LayerGaps {
  std::vector<std::string> missing;  // not waived: refuse `passed`
  std::vector<std::string> waived;   // missing but waived: pass, and say so
  bool complete() const { return missing.empty() && waived.empty(); }
};
template <size_t N>
LayerGaps find_layer_gaps(const std::vector<LayerReport>& reports,
                          const std::array<Layer, N>& required, const InsecureLayers& insecure);
LayerGaps find_layer_gaps(const std::vector<LayerReport>& reports,
                          const std::vector<Layer>& required, const InsecureLayers& insecure);

// "sandbox_incomplete: user, seccomp (not set up: <detail of the first>)": the reason a verdict
// names when it refuses `passed`.
std::string incomplete_reason(const LayerGaps& gaps, const std::vector<LayerReport>& reports,
                              std::string_view scope = "");

// {name, set_up, detail}; a list of them, and back (entries that are not objects are skipped).
nlohmann::json layer_to_json(const LayerReport& layer);
nlohmann::json layers_to_json(const std::vector<LayerReport>& layers);
std::vector<LayerReport> layers_from_json(const nlohmann::json& array);

template <size_t N>
LayerGaps find_layer_gaps(const std::vector<LayerReport>& reports,
                          const std::array<Layer, N>& required, const InsecureLayers& insecure) {
  return find_layer_gaps(reports, std::vector<Layer>(required.begin(), required.end()), insecure);
}

}  // namespace stitch::sandbox
