// A training-mode BatchNorm's statistics epilogue on the host, no GPU: the epilogue functor the
// emitter writes for each statistics reduction of tests/tasks/plan_bn_running_stats.py, compiled
// as plain C++ (host_scalar_ops.h) by the host compiler and called once per output, as
// launch_reduce does, with made-up batch statistics. The state updates it stores are PyTorch's:
// running * (1 - momentum) + batch * momentum with the unbiased batch variance, and
// num_batches_tracked + 1, written once (fusion rule F9); nothing lands past a stored value's end.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "codegen/program_emitter.h"
#include "op_table.h"
#include "plan/planner.h"
#include "support/plan_fixtures.h"
#include "util/fs.h"
#include "util/process.h"

namespace stitch::codegen::testing {
namespace {

namespace fs = std::filesystem;

constexpr double kUnwritten = -7777;   // every store buffer's fill, and its padding's
constexpr int64_t kTrackedBefore = 5;  // num_batches_tracked before the call

// The task's momentum per BatchNorm: 0.3, and None after the linear layer (a cumulative average,
// factor 1 / num_batches_tracked = 1 on the capture's first call, which the graph keeps).
const std::map<std::string, double> kMomentum = {{"bn2d", 0.3}, {"bn1d", 1.0}};

// The made-up batch statistics handed to output e, and the buffers' values before the call.
double batch_mean(int64_t e) {
  return std::sin(0.7 * static_cast<double>(e) + 0.2);
}
double batch_m2(int64_t e) {
  return 1.5 + 0.37 * static_cast<double>(e);
}
double param_value(const std::string& name, int64_t k) {
  if (name.ends_with(".num_batches_tracked")) return kTrackedBefore;
  if (name.ends_with(".running_var")) return 0.5 + 0.05 * static_cast<double>(k);
  return 0.1 * static_cast<double>(k) - 0.2;
}

std::string host_type(ir::DType dtype) {
  return dtype == ir::DType::int64 ? "int64_t" : "float";
}

// The text of functor `name` in the program (following a `using name = other;` alias).
std::string functor_text(const std::string& source, std::string name) {
  for (;;) {
    const std::string alias = "using " + name + " = ";
    const size_t at = source.find(alias);
    if (at == std::string::npos) break;
    const size_t start = at + alias.size();
    name = source.substr(start, source.find(';', start) - start);
  }
  const size_t start = source.find("struct " + name + " {");
  if (start == std::string::npos) return "";
  return source.substr(start, source.find("\n};\n", start) + 4 - start);
}

// One stored value: which graph value, its dtype and element count.
struct StoredValue {
  ir::ValueRef value;
  ir::DType dtype;
  int64_t numel;
};

// The host program: the functor, its buffers, one call per output, then every store buffer's
// elements (padding included) as "<store> <element> <value>" lines.
std::string host_program(const plan::Plan& plan, const plan::Subtask& subtask,
                         const plan::ReductionSpec& spec, const std::string& functor,
                         const std::vector<StoredValue>& stores) {
  const ir::Node& node = plan.graph.nodes[spec.node];
  const int64_t outputs = spec.outer * spec.inner;
  std::string text =
      "#include <cstdint>\n#include <cstdio>\n\n#include \"tests/codegen/host_scalar_ops.h\"\n\n"
      "using namespace stitch::kernels;\n\n"
      "struct MeanVar {\n  float mean;\n  float m2;\n  int64_t count;\n};\n\n" +
      functor + "\nint main() {\n";
  std::string members;
  for (size_t j = node.outputs.size(); j < spec.epilogue->loads.size(); ++j) {
    const ir::ValueRef base = spec.epilogue->loads[j].base;
    const ir::TensorType& type = plan.graph.type_of(base);
    std::string values;
    for (int64_t k = 0; k < type.numel(); ++k)
      values += fmt::format("{}, ", param_value(plan.graph.name_of(base), k));
    text += fmt::format("  static const {} l{}[{}] = {{{}}};\n", host_type(type.dtype),
                        j - node.outputs.size(), type.numel(), values);
    members += fmt::format("l{}, ", j - node.outputs.size());
  }
  for (size_t j = 0; j < stores.size(); ++j) {
    text += fmt::format("  static {} out{}[{}];\n  for (auto& x : out{}) x = {};\n",
                        host_type(stores[j].dtype), j, stores[j].numel + outputs, j, kUnwritten);
    members += fmt::format("out{}, ", j);
  }
  members.resize(members.size() - 2);
  std::string means, m2s;
  for (int64_t e = 0; e < outputs; ++e) {
    means += fmt::format("{:.9g}f, ", static_cast<float>(batch_mean(e)));
    m2s += fmt::format("{:.9g}f, ", static_cast<float>(batch_m2(e)));
  }
  text += fmt::format(
      "  static const float means[{0}] = {{{1}}};\n"
      "  static const float m2s[{0}] = {{{2}}};\n",
      outputs, means, m2s);
  text += fmt::format("  const {}_epilogue epi{{{}}};\n", subtask.id, members);
  text += fmt::format("  for (int64_t o = 0; o < {}; ++o)\n", spec.outer);
  text += fmt::format("    for (int64_t i = 0; i < {}; ++i)\n", spec.inner);
  text += fmt::format("      epi(o, i, MeanVar{{means[o * {0} + i], m2s[o * {0} + i], {1}}});\n",
                      spec.inner, spec.reduce);
  for (size_t j = 0; j < stores.size(); ++j)
    text += fmt::format(
        "  for (int k = 0; k < {}; ++k) std::printf(\"{} %d %.9g\\n\", k, "
        "static_cast<double>(out{}[k]));\n",
        stores[j].numel + outputs, j, j);
  return text + "  return 0;\n}\n";
}

// What PyTorch stores in state buffer `name` at element k, from the statistics of `reduce`
// elements handed to the epilogue.
double expected_update(const std::string& name, int64_t k, int64_t reduce) {
  const double momentum = kMomentum.at(name.substr(0, name.find('.')));
  if (name.ends_with(".num_batches_tracked")) return kTrackedBefore + 1;
  const double batch = name.ends_with(".running_var")
                           ? static_cast<float>(batch_m2(k)) / static_cast<double>(reduce - 1)
                           : static_cast<float>(batch_mean(k));
  return (1 - momentum) * param_value(name, k) + momentum * batch;
}

TEST(ReductionEpilogueHost, BatchNormStateUpdatesAreTorchs) {
  auto graph =
      ir::load_graph(std::string(STITCH_PLAN_DATA_DIR) + "/plan_bn_running_stats.graph.json");
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  auto plan =
      plan::make_plan(*graph, stitch::testing::plan_fixture_options("plan_bn_running_stats"));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  auto program = emit_program(*plan);
  ASSERT_TRUE(program.ok()) << program.error().message;
  const ir::Graph& g = plan->graph;
  // Which state buffer each returned value updates.
  std::map<std::string, std::string> updates;
  for (size_t k = 0; k < g.state_params.size(); ++k)
    updates[g.name_of(g.outputs[g.user_output_count() + k])] = g.state_params[k];

  std::string pattern = (fs::temp_directory_path() / "stitch_epilogue_XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const fs::path dir = pattern;
  size_t checked = 0;
  for (const plan::Subtask& subtask : plan->subtasks) {
    const auto* spec = std::get_if<plan::ReductionSpec>(&subtask.spec);
    if (!spec) continue;
    SCOPED_TRACE(subtask.id);
    ASSERT_TRUE(spec->epilogue);
    const std::string functor = functor_text(program->source, subtask.id + "_epilogue");
    ASSERT_FALSE(functor.empty());
    std::vector<StoredValue> stores;
    for (const plan::Store& store : spec->stores)
      stores.push_back({store.value, g.type_of(store.value).dtype, g.type_of(store.value).numel()});
    const fs::path source = dir / (subtask.id + ".cc"), binary = dir / subtask.id;
    ASSERT_TRUE(
        write_file_atomic(source, host_program(*plan, subtask, *spec, functor, stores)).ok());
    SystemProcessRunner runner;
    ProcessSpec compile;
    compile.argv = {STITCH_HOST_CXX,
                    "-std=c++17",
                    "-O1",
                    "-Wall",
                    "-Werror",
                    "-I" + std::string(STITCH_SOURCE_DIR),
                    "-I" + std::string(STITCH_CUDA_INCLUDE_DIR),
                    source.string(),
                    "-o",
                    binary.string()};
    compile.timeout_s = 300;
    auto compiled = runner.run(compile);
    ASSERT_TRUE(compiled.ok()) << compiled.error().message;
    ASSERT_TRUE(compiled->succeeded()) << compiled->stderr_text;
    ProcessSpec run;
    run.argv = {binary.string()};
    run.timeout_s = 60;
    auto ran = runner.run(run);
    ASSERT_TRUE(ran.ok()) << ran.error().message;
    ASSERT_TRUE(ran->succeeded()) << ran->describe();

    std::istringstream lines(ran->stdout_text);
    size_t j = 0;
    int64_t k = 0;
    double actual = 0;
    while (lines >> j >> k >> actual) {
      ASSERT_LT(j, stores.size());
      const std::string name = g.name_of(stores[j].value);
      if (k >= stores[j].numel) {
        EXPECT_EQ(actual, kUnwritten) << name << " written past its end, at " << k;
        continue;
      }
      const auto update = updates.find(name);
      if (update == updates.end()) continue;  // the saved mean and rstd: not state
      EXPECT_TRUE(within(static_cast<float>(actual),
                         expected_update(update->second, k, spec->reduce), Tolerance{1e-7, 1e-6}))
          << update->second << "[" << k << "] = " << actual;
      ++checked;
    }
  }
  // Per BatchNorm: the running mean and variance per channel, and the count.
  EXPECT_EQ(checked, 2 * 8 + 1 + 2 * 32 + 1);
  std::error_code ignored;
  fs::remove_all(dir, ignored);
}

}  // namespace
}  // namespace stitch::codegen::testing
