// runner.json's typed reader (runner_report.h).
#include "runner/runner_report.h"

#include <nlohmann/json.hpp>

#include "util/fs.h"

namespace stitch {
namespace {

using nlohmann::json;

template <typename T>
std::vector<T> array_of(const json& parent, const char* key) {
  std::vector<T> values;
  if (!parent.is_object() || !parent.contains(key) || !parent[key].is_array()) return values;
  for (const auto& value : parent[key])
    if (value.is_number()) values.push_back(value.get<T>());
  return values;
}

const json& child(const json& parent, const char* key) {
  static const json empty = json::object();
  if (parent.is_object() && parent.contains(key) && parent[key].is_object()) return parent[key];
  return empty;
}

// sandbox: the booleans and the layer list; the layers a runner reported only as booleans
// (network_namespace, seccomp) are added to the list unless it names them.
Status read_sandbox(const json& sandbox, RunnerReport& report) {
  report.network_namespace = sandbox.value("network_namespace", false);
  report.seccomp = sandbox.value("seccomp", false);
  if (sandbox.contains("layers")) {
    if (!sandbox["layers"].is_array())
      return make_error("runner.json: sandbox.layers is not an array");
    report.sandbox_layers = sandbox::layers_from_json(sandbox["layers"]);
  }
  auto listed = [&](std::string_view name) {
    for (const auto& layer : report.sandbox_layers)
      if (layer.name == name) return true;
    return false;
  };
  if (sandbox.contains("network_namespace") && !listed("network_namespace"))
    report.sandbox_layers.push_back({"network_namespace", report.network_namespace,
                                     sandbox.value("network_detail", std::string())});
  if (sandbox.contains("seccomp") && !listed("seccomp"))
    report.sandbox_layers.push_back(
        {"seccomp", report.seccomp, sandbox.value("seccomp_detail", std::string())});
  return {};
}

Result<RunnerReport> parse_document(const json& doc) {
  if (!doc.is_object()) return make_error("runner.json: not a JSON object");
  if (doc.value("format", std::string()) != "stitchcuda.runner")
    return make_error("runner.json: format is not stitchcuda.runner");
  if (doc.value("version", 0) != 1)
    return make_error("runner.json: version {} (expected 1)", doc.value("version", json()).dump());
  RunnerReport report;
  std::string status = doc.value("status", std::string());
  auto parsed_status = enum_from_name<RunnerStatus>(status);
  if (!parsed_status) return make_error("runner.json: unknown status '{}'", status);
  report.status = *parsed_status;
  report.message = doc.value("message", std::string());
  report.phase = doc.value("phase", std::string());
  report.nonce = doc.value("nonce", std::string());
  report.self_test = doc.value("self_test", false);
  report.device_name = child(doc, "device").value("name", std::string());
  report.init_ms = doc.value("init_ms", 0.0);

  if (doc.contains("findings")) {
    if (!doc["findings"].is_array()) return make_error("runner.json: findings is not an array");
    for (const auto& entry : doc["findings"])
      report.findings.push_back(
          reported_finding(entry.value("kind", std::string()), entry.value("detail", std::string()),
                           entry.value("fatal", true), HackKind::undefined_behaviour));
  }
  if (doc.contains("check_sets") && doc["check_sets"].is_array()) {
    for (const auto& entry : doc["check_sets"]) {
      RunnerCheckSet set;
      set.index = entry.value("index", 0);
      set.run = entry.value("run", 0);
      set.canaries_intact = entry.value("canaries_intact", true);
      set.inputs_unchanged = entry.value("inputs_unchanged", true);
      set.poison_remaining = array_of<int64_t>(entry, "poison_remaining");
      set.unjoined_elements = array_of<int64_t>(entry, "unjoined_elements");
      set.launches = entry.value("launches", -1);
      set.gpu_ms = entry.value("gpu_ms", 0.0);
      set.copied_to_slot = entry.value("copied_to_slot", false);
      report.check_sets.push_back(std::move(set));
    }
  }
  const json& determinism = child(doc, "determinism");
  report.determinism_checked = determinism.value("checked", false);
  report.deterministic = determinism.value("identical", true);
  if (determinism.contains("outputs") && determinism["outputs"].is_array())
    for (const auto& output : determinism["outputs"]) {
      report.determinism_bit_mismatches.push_back(output.value("bit_mismatches", int64_t{0}));
      report.determinism_max_abs_diff.push_back(output.value("max_abs_diff", 0.0));
    }
  const json& timing = child(doc, "timing");
  report.gpu_ms = array_of<double>(timing, "gpu_ms");
  report.synced_ms = array_of<double>(timing, "synced_ms");
  report.empty_sync_gap_ms = array_of<double>(timing, "empty_sync_gap_ms");
  report.wall_ms = array_of<double>(timing, "wall_ms");
  report.spot_iterations = array_of<int>(timing, "spot_iterations");
  report.timing_canaries_intact = timing.value("canaries_intact", true);
  report.timing_inputs_unchanged = timing.value("inputs_unchanged", true);
  if (timing.contains("rechecks") && timing["rechecks"].is_array())
    for (const auto& entry : timing["rechecks"])
      report.rechecks.push_back({entry.value("iteration", 0), entry.value("output", 0),
                                 entry.value("bit_mismatches", int64_t{0}),
                                 entry.value("tolerance_mismatches", int64_t{0}),
                                 entry.value("max_abs_diff", 0.0)});
  const json& launches = child(doc, "launches");
  report.launches_available = launches.value("available", false);
  report.launches_detail = launches.value("detail", std::string());
  report.launches_per_forward = array_of<int>(launches, "per_forward");
  const json& names = child(launches, "kernel_names");
  for (const auto& [name, count] : names.items())
    if (count.is_number_integer()) report.kernel_names.emplace_back(name, count.get<int>());
  STITCH_TRY(read_sandbox(child(doc, "sandbox"), report));
  const json& threads = child(doc, "threads");
  report.threads_before_dlopen = threads.value("before_dlopen", 0);
  report.threads_after_init = threads.value("after_init", 0);
  return report;
}

}  // namespace

bool RunnerReport::canaries_intact() const {
  for (const auto& set : check_sets)
    if (!set.canaries_intact) return false;
  return timing_canaries_intact;
}

bool RunnerReport::inputs_unchanged() const {
  for (const auto& set : check_sets)
    if (!set.inputs_unchanged) return false;
  return timing_inputs_unchanged;
}

bool RunnerReport::has_fatal_finding() const {
  for (const auto& finding : findings)
    if (finding.fatal) return true;
  return false;
}

Result<RunnerReport> parse_runner_report(std::string_view json_text) {
  json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return make_error("runner.json: not valid JSON");
  try {  // nlohmann's typed accessors throw on a mistyped field
    return parse_document(doc);
  } catch (const std::exception& error) {
    return make_error("runner.json: malformed: {}", error.what());
  }
}

Result<RunnerReport> read_runner_report(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return make_error("{}: missing (the runner did not write it)", path.string());
  STITCH_ASSIGN_OR_RETURN(std::string text, read_file(path));
  auto report = parse_runner_report(text);
  if (!report) return report.error().with_context(path.string());
  return report;
}

}  // namespace stitch
