// Layer names, gaps and JSON; see layers.h.
#include "sandbox/layers.h"

#include <algorithm>

namespace stitch::sandbox {

bool InsecureLayers::waives(Layer layer) const {
  return all || std::find(layers.begin(), layers.end(), layer) != layers.end();
}

Result<InsecureLayers> parse_insecure_layers(const std::vector<std::string>& names) {
  InsecureLayers insecure;
  for (const auto& name : names) {
    if (name == "all") {
      insecure.all = true;
      continue;
    }
    std::optional<Layer> layer = enum_from_name<Layer>(name);
    if (!layer) {
      std::string known = "all";
      for (auto known_name : kLayerNames)
        known += fmt::format(", {}", known_name);
      return make_error(ErrorKind::bad_input, "--insecure-sandbox {}: not a layer (one of {})",
                        name, known);
    }
    if (!insecure.waives(*layer)) insecure.layers.push_back(*layer);
  }
  return insecure;
}

std::vector<std::string> insecure_layer_names(const InsecureLayers& insecure) {
  if (insecure.all) return {"all"};
  std::vector<std::string> names;
  for (Layer layer : insecure.layers)
    names.emplace_back(enum_name(layer));
  return names;
}

LayerGaps find_layer_gaps(const std::vector<LayerReport>& reports,
                          const std::vector<Layer>& required, const InsecureLayers& insecure) {
  LayerGaps gaps;
  for (Layer layer : required) {
    std::string_view name = enum_name(layer);
    bool set_up = std::any_of(reports.begin(), reports.end(), [&](const LayerReport& report) {
      return report.name == name && report.set_up;
    });
    if (set_up) continue;
    (insecure.waives(layer) ? gaps.waived : gaps.missing).emplace_back(name);
  }
  return gaps;
}

std::string incomplete_reason(const LayerGaps& gaps, const std::vector<LayerReport>& reports,
                              std::string_view scope) {
  std::string names;
  for (const auto& name : gaps.missing)
    names += fmt::format("{}{}", names.empty() ? "" : ", ", name);
  std::string why;
  for (const auto& report : reports)
    if (!gaps.missing.empty() && report.name == gaps.missing.front() && !report.detail.empty())
      why = fmt::format(" ({}: {})", report.name, report.detail);
  if (why.empty() && !gaps.missing.empty())
    why = fmt::format(" ({}: not reported)", gaps.missing.front());
  return fmt::format("sandbox_incomplete: {}{}{}{} (--insecure-sandbox LAYER accepts the risk)",
                     scope, scope.empty() ? "" : ": ", names, why);
}

nlohmann::json layer_to_json(const LayerReport& layer) {
  return {{"name", layer.name}, {"set_up", layer.set_up}, {"detail", layer.detail}};
}

nlohmann::json layers_to_json(const std::vector<LayerReport>& layers) {
  nlohmann::json array = nlohmann::json::array();
  for (const auto& layer : layers)
    array.push_back(layer_to_json(layer));
  return array;
}

std::vector<LayerReport> layers_from_json(const nlohmann::json& array) {
  std::vector<LayerReport> layers;
  if (!array.is_array()) return layers;
  for (const auto& entry : array) {
    if (!entry.is_object()) continue;
    LayerReport layer;
    if (entry.contains("name") && entry["name"].is_string()) layer.name = entry["name"];
    if (entry.contains("set_up") && entry["set_up"].is_boolean()) layer.set_up = entry["set_up"];
    if (entry.contains("detail") && entry["detail"].is_string()) layer.detail = entry["detail"];
    layers.push_back(std::move(layer));
  }
  return layers;
}

}  // namespace stitch::sandbox
