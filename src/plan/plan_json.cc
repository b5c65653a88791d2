// plan.json writer and reader (plan_json.h). Value references use graph.json's spelling
// ({"input": 0}, {"param": "fc.weight"}, {"node": "addmm", "out": 0}); non-finite floats are
// {"float": "inf"} as there; the rewritten graph is embedded as a graph.json object. Each subtask
// kind's spec object is written and read in plan_json_kinds.inc.
#include "plan/plan_json.h"

#include <cmath>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/json_reader.h"
#include "util/fs.h"

namespace stitch::plan {

namespace {

using json = nlohmann::ordered_json;

constexpr const char* kFormat = "stitchcuda.plan";
constexpr const char* kBounds[] = {"memory", "compute", "latency"};
constexpr const char* kWheres[] = {"arena", "output", "persistent"};
constexpr const char* kKinds[] = {"matmul",    "reduction", "row",    "elementwise",
                                  "copy",      "pool",      "conv",   "opaque",
                                  "attention", "scan",      "gather", "recurrent"};
static_assert(std::size(kKinds) == std::variant_size_v<SubtaskSpec>);

json number(double value) {
  if (std::isnan(value)) return json{{"float", "nan"}};
  if (std::isinf(value)) return json{{"float", value > 0 ? "inf" : "-inf"}};
  return value;
}

// Reading throws nlohmann's exceptions or ReadError internally; parse_plan turns both into an
// Error.
struct ReadError {
  std::string message;
};

double read_number(const json& value) {
  if (value.is_object()) {
    const std::string text = value.at("float").get<std::string>();
    if (text == "nan") return std::nan("");
    if (text == "inf") return INFINITY;
    if (text == "-inf") return -INFINITY;
    throw ReadError{fmt::format("unknown float '{}'", text)};
  }
  return value.get<double>();
}

template <size_t N>
int read_enum(const json& value, const char* const (&names)[N], const char* what) {
  const std::string text = value.get<std::string>();
  for (size_t i = 0; i < N; ++i)
    if (text == names[i]) return static_cast<int>(i);
  throw ReadError{fmt::format("unknown {} '{}'", what, text)};
}

// Each kind's spec object: write_kind(writer, spec) and read_<kind>(reader, object).
#include "plan/plan_json_kinds.inc"

// ---- writing -----------------------------------------------------------------------------------

class Writer {
 public:
  explicit Writer(const ir::Graph& graph) : graph_(graph) {}

  json ref(const ir::ValueRef& ref) const {
    switch (ref.kind) {
      case ir::ValueRef::Kind::input:
        return json{{"input", ref.index}};
      case ir::ValueRef::Kind::param:
        return json{{"param", graph_.params.at(ref.index).name}};
      case ir::ValueRef::Kind::node:
        break;
    }
    return json{{"node", graph_.nodes.at(ref.index).id}, {"out", ref.out}};
  }
  json access(const Access& a) const {
    return json{
        {"base", ref(a.base)}, {"offset", a.offset}, {"shape", a.shape}, {"strides", a.strides}};
  }
  json node(int index) const { return graph_.nodes.at(index).id; }
  static json operand(const Operand& o) {
    switch (o.kind) {
      case Operand::Kind::load:
        return json{{"load", o.index}};
      case Operand::Kind::step:
        return json{{"step", o.index}};
      case Operand::Kind::scalar:
        return json{{"scalar", number(o.scalar)}};
      case Operand::Kind::index:
        break;
    }
    return json{{"index", o.index}};
  }
  json body(const Body& b) const {
    json loads = json::array(), steps = json::array();
    for (const Access& load : b.loads)
      loads.push_back(access(load));
    for (const BodyStep& step : b.steps) {
      json operands = json::array();
      for (const Operand& o : step.operands)
        operands.push_back(operand(o));
      steps.push_back(json{{"node", node(step.node)},
                           {"operands", operands},
                           {"dtype", ir::dtype_name(step.dtype)}});
    }
    return json{{"loads", loads}, {"steps", steps}};
  }
  json stores(const std::vector<Store>& stores) const {
    json list = json::array();
    for (const Store& s : stores)
      list.push_back(json{{"value", ref(s.value)}, {"from", operand(s.from)}});
    return list;
  }
  void optional_body(json& object, const char* key, const std::optional<Body>& b) const {
    if (b) object[key] = body(*b);
  }
  // What a reduction and a row kernel fuse around their op: prologue, epilogue and stores.
  template <class Spec>
  void fused(json& object, const Spec& s) const {
    optional_body(object, "prologue", s.prologue);
    optional_body(object, "epilogue", s.epilogue);
    object["stores"] = stores(s.stores);
  }

  // The spec object of a subtask's kind (plan_json_kinds.inc).
  json spec(const SubtaskSpec& spec) const {
    return std::visit([&](const auto& s) { return write_kind(*this, s); }, spec);
  }

 private:
  const ir::Graph& graph_;
};

// ---- reading -----------------------------------------------------------------------------------

class Reader {
 public:
  explicit Reader(const ir::Graph& graph) : graph_(graph) {
    for (size_t i = 0; i < graph.nodes.size(); ++i)
      nodes_[graph.nodes[i].id] = static_cast<int>(i);
    for (size_t i = 0; i < graph.params.size(); ++i)
      params_[graph.params[i].name] = static_cast<int>(i);
  }

  int node(const json& value) const {
    const std::string id = value.get<std::string>();
    auto it = nodes_.find(id);
    if (it == nodes_.end()) throw ReadError{fmt::format("unknown node '{}'", id)};
    return it->second;
  }
  ir::ValueRef ref(const json& value) const {
    if (value.contains("input")) {
      const int index = value.at("input").get<int>();
      if (index < 0 || static_cast<size_t>(index) >= graph_.inputs.size())
        throw ReadError{fmt::format("unknown input {}", index)};
      return {ir::ValueRef::Kind::input, index, 0};
    }
    if (value.contains("param")) {
      const std::string name = value.at("param").get<std::string>();
      auto it = params_.find(name);
      if (it == params_.end()) throw ReadError{fmt::format("unknown param '{}'", name)};
      return {ir::ValueRef::Kind::param, it->second, 0};
    }
    const int index = node(value.at("node"));
    const int out = value.value("out", 0);
    if (out < 0 || static_cast<size_t>(out) >= graph_.nodes[index].outputs.size())
      throw ReadError{fmt::format("node '{}' has no output {}", graph_.nodes[index].id, out)};
    return {ir::ValueRef::Kind::node, index, out};
  }
  Access access(const json& value) const {
    Access a{ref(value.at("base")), value.at("offset").get<int64_t>(),
             value.at("shape").get<std::vector<int64_t>>(),
             value.at("strides").get<std::vector<int64_t>>()};
    if (a.shape.size() != a.strides.size()) throw ReadError{"shape and strides differ in rank"};
    return a;
  }
  static Operand operand(const json& value) {
    if (value.contains("load")) return {Operand::Kind::load, value.at("load").get<int>(), 0};
    if (value.contains("step")) return {Operand::Kind::step, value.at("step").get<int>(), 0};
    if (value.contains("scalar"))
      return {Operand::Kind::scalar, 0, read_number(value.at("scalar"))};
    return {Operand::Kind::index, value.at("index").get<int>(), 0};
  }
  Body body(const json& value) const {
    Body b;
    for (const json& load : value.at("loads"))
      b.loads.push_back(access(load));
    for (const json& item : value.at("steps")) {
      BodyStep step;
      step.node = node(item.at("node"));
      for (const json& o : item.at("operands"))
        step.operands.push_back(operand(o));
      auto dtype = ir::dtype_from_name(item.at("dtype").get<std::string>());
      if (!dtype) throw ReadError{"unknown dtype"};
      step.dtype = *dtype;
      b.steps.push_back(std::move(step));
    }
    return b;
  }
  std::optional<Body> optional_body(const json& object, const char* key) const {
    if (!object.contains(key)) return std::nullopt;
    return body(object.at(key));
  }
  std::optional<Access> optional_access(const json& object, const char* key) const {
    if (!object.contains(key)) return std::nullopt;
    return access(object.at(key));
  }
  std::vector<Store> stores(const json& value) const {
    std::vector<Store> list;
    for (const json& item : value)
      list.push_back(Store{ref(item.at("value")), operand(item.at("from"))});
    return list;
  }
  template <class Spec>
  void fused(const json& object, Spec& s) const {
    s.prologue = optional_body(object, "prologue");
    s.epilogue = optional_body(object, "epilogue");
    s.stores = stores(object.at("stores"));
  }

  // The spec object of a subtask of kind `kind` (plan_json_kinds.inc).
  SubtaskSpec spec(const std::string& kind, const json& o) const {
    switch (read_enum(json(kind), kKinds, "subtask kind")) {
      case 0:
        return read_matmul(*this, o);
      case 1:
        return read_reduction(*this, o);
      case 2:
        return read_row(*this, o);
      case 3:
        return read_elementwise(*this, o);
      case 4:
        return read_copy(*this, o);
      case 5:
        return read_pool(*this, o);
      case 7:
        return read_opaque(*this, o);
      case 8:
        return read_attention(*this, o);
      case 9:
        return read_scan(*this, o);
      case 10:
        return read_gather(*this, o);
      case 11:
        return read_recurrent(*this, o);
      default:
        return read_conv(*this, o);
    }
  }

 private:
  const ir::Graph& graph_;
  std::unordered_map<std::string, int> nodes_, params_;
};

}  // namespace

std::string serialize_plan(const Plan& plan) {
  const Writer writer(plan.graph);
  json root;
  root["format"] = kFormat;
  root["version"] = plan.version;
  root["task"] = plan.task;
  root["peaks"] = json{{"name", plan.peaks.name},
                       {"fp32_tflops", number(plan.peaks.fp32_tflops)},
                       {"dram_gbps", number(plan.peaks.dram_gbps)},
                       {"sms", plan.peaks.sms},
                       {"tf32_tflops", number(plan.peaks.tf32_tflops)}};
  root["floor_us"] = number(plan.floor_us);
  root["host"] = json{{"cuda_graph", plan.host.cuda_graph},
                      {"workspace_bytes", plan.host.workspace_bytes},
                      {"library_workspace_bytes", plan.host.library_workspace_bytes},
                      {"persistent_bytes", plan.host.persistent_bytes}};
  json subtasks = json::array();
  for (const Subtask& subtask : plan.subtasks) {
    json nodes = json::array();
    for (int node : subtask.nodes)
      nodes.push_back(writer.node(node));
    json tunables = json::object();
    for (const auto& [key, value] : subtask.tunables)
      tunables[key] = value;
    subtasks.push_back(json{{"id", subtask.id},
                            {"kind", kKinds[subtask.spec.index()]},
                            {"nodes", nodes},
                            {"kernel", subtask.kernel},
                            {"tunables", tunables},
                            {"flops", number(subtask.flops)},
                            {"bytes", number(subtask.bytes)},
                            {"floor_us", number(subtask.floor_us)},
                            {"bound", kBounds[static_cast<int>(subtask.bound)]},
                            {"at_init", subtask.at_init},
                            {"spec", writer.spec(subtask.spec)}});
  }
  root["subtasks"] = std::move(subtasks);
  json buffers = json::array();
  for (const BufferSlot& slot : plan.buffers)
    buffers.push_back(json{{"value", slot.value},
                           {"where", kWheres[static_cast<int>(slot.where)]},
                           {"offset", slot.offset},
                           {"bytes", slot.bytes}});
  root["buffers"] = std::move(buffers);
  json skipped = json::array();
  for (const Skipped& s : plan.skipped)
    skipped.push_back(json{{"node", s.node_id}, {"reason", s.reason}});
  root["skipped"] = std::move(skipped);
  json preps = json::array();
  for (const ParamPrep& p : plan.param_preps)
    preps.push_back(json{
        {"param", plan.graph.params.at(p.param).name}, {"action", p.action}, {"detail", p.detail}});
  root["param_preps"] = std::move(preps);
  json values = json::object();
  for (const auto& [name, access] : plan.values)
    values[name] = writer.access(access);
  root["values"] = std::move(values);
  root["graph"] = json::parse(ir::serialize_graph(plan.graph));
  return root.dump(1) + "\n";
}

namespace {

// The steps of parse_plan: each throws ReadError or nlohmann's exceptions, and names the field
// it reads in `field` first, so that the error says where it is.
void read_settings(const json& root, Plan& plan, std::string& field) {
  field = "task";
  plan.task = root.at("task").get<std::string>();
  field = "peaks";
  const json& peaks = root.at("peaks");
  plan.peaks = GpuPeaks{peaks.at("name").get<std::string>(), read_number(peaks.at("fp32_tflops")),
                        read_number(peaks.at("dram_gbps")), peaks.at("sms").get<int>(),
                        peaks.contains("tf32_tflops") ? read_number(peaks.at("tf32_tflops")) : 0.0};
  field = "floor_us";
  plan.floor_us = read_number(root.at("floor_us"));
  field = "host";
  const json& host = root.at("host");
  plan.host =
      HostStrategy{host.at("cuda_graph").get<bool>(), host.at("workspace_bytes").get<int64_t>(),
                   host.at("library_workspace_bytes").get<int64_t>(),
                   host.at("persistent_bytes").get<int64_t>()};
}

Subtask read_subtask(const Reader& reader, const json& item, std::string& field) {
  Subtask subtask;
  subtask.id = item.at("id").get<std::string>();
  for (const json& node : item.at("nodes"))
    subtask.nodes.push_back(reader.node(node));
  subtask.kernel = item.at("kernel").get<std::string>();
  for (const auto& [key, value] : item.at("tunables").items())
    subtask.tunables[key] = value.get<int64_t>();
  subtask.flops = read_number(item.at("flops"));
  subtask.bytes = read_number(item.at("bytes"));
  subtask.floor_us = read_number(item.at("floor_us"));
  subtask.bound = static_cast<Bound>(read_enum(item.at("bound"), kBounds, "bound"));
  subtask.at_init = item.at("at_init").get<bool>();
  field += ".spec";
  subtask.spec = reader.spec(item.at("kind").get<std::string>(), item.at("spec"));
  return subtask;
}

// Buffers, skipped nodes, param preparations and the values' accesses.
void read_tables(const json& root, const Reader& reader, Plan& plan, std::string& field) {
  field = "buffers";
  for (const json& item : root.at("buffers"))
    plan.buffers.push_back(BufferSlot{
        item.at("value").get<std::string>(),
        static_cast<BufferSlot::Where>(read_enum(item.at("where"), kWheres, "buffer place")),
        item.at("offset").get<int64_t>(), item.at("bytes").get<int64_t>()});
  field = "skipped";
  for (const json& item : root.at("skipped"))
    plan.skipped.push_back(
        Skipped{item.at("node").get<std::string>(), item.at("reason").get<std::string>()});
  field = "param_preps";
  for (const json& item : root.at("param_preps")) {
    const ir::ValueRef param = reader.ref(json{{"param", item.at("param")}});
    plan.param_preps.push_back(ParamPrep{param.index, item.at("action").get<std::string>(),
                                         item.at("detail").get<std::string>()});
  }
  field = "values";
  for (const auto& [name, value] : root.at("values").items()) {
    field = fmt::format("values['{}']", name);
    plan.values[name] = reader.access(value);
  }
}

}  // namespace

Result<Plan> parse_plan(std::string_view text, std::string_view source_name) {
  auto parsed = ir::read_json_strict(text, 256);
  if (!parsed.ok()) return parsed.error().with_context(std::string(source_name));
  const json& root = *parsed;
  std::string field = "(root)";
  try {
    field = "format";
    if (root.at("format").get<std::string>() != kFormat)
      throw ReadError{fmt::format("not a plan (format is not '{}')", kFormat)};
    field = "version";
    Plan plan;
    plan.version = root.at("version").get<int>();
    if (plan.version != kPlanVersion)
      throw ReadError{fmt::format("version {} (this build reads {})", plan.version, kPlanVersion)};
    field = "graph";
    auto graph = ir::parse_graph(root.at("graph").dump(), std::string(source_name) + ": graph");
    if (!graph.ok()) return graph.error();
    plan.graph = std::move(*graph);
    const Reader reader(plan.graph);
    read_settings(root, plan, field);
    const json& subtasks = root.at("subtasks");
    for (size_t i = 0; i < subtasks.size(); ++i) {
      field = fmt::format("subtasks[{}]", i);
      plan.subtasks.push_back(read_subtask(reader, subtasks[i], field));
    }
    read_tables(root, reader, plan, field);
    return plan;
  } catch (const ReadError& error) {
    return make_error("{}: {}: {}", source_name, field, error.message);
  } catch (const json::exception& error) {
    return make_error("{}: {}: {}", source_name, field, error.what());
  }
}

Status save_plan(const Plan& plan, const std::string& path) {
  return write_file_atomic(path, serialize_plan(plan));
}

Result<Plan> load_plan(const std::string& path) {
  STITCH_ASSIGN_OR_RETURN(std::string text, read_file(path));
  return parse_plan(text, path);
}

}  // namespace stitch::plan
