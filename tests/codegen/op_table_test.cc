// The per-op differential table (op_table.h), CPU mode: every op the emitter renders has a row, and
// every row's rendered expression — compiled for the host as plain C++ with kernels/scalar_ops.cuh
// (host_scalar_ops.h) by the host compiler, at test time — agrees with the row's reference on the
// row's inputs within its tolerance. Tensor-Scalar rows are checked in both forms the Planner
// produces (the number read from the node, and handed in operand position).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "codegen/emit_elementwise.h"
#include "codegen/program_emitter.h"
#include "plan/planner.h"
#include "op_table.h"
#include "util/fs.h"
#include "util/process.h"

namespace stitch::codegen::testing {
namespace {

namespace fs = std::filesystem;

uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
float float_of(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// One expression to evaluate: a case in one of its rendered forms.
struct Rendered {
  const OpCase* c;
  std::string form;  // "node" or "scalar operand"
  std::string expr;
};

std::vector<std::string> operand_names(size_t count) {
  std::vector<std::string> names;
  for (size_t k = 0; k < count; ++k) names.push_back(fmt::format("x{}", k));
  return names;
}

std::vector<Rendered> render_all() {
  std::vector<Rendered> out;
  for (const OpCase& c : op_cases()) {
    const ir::Node node = case_node(c);
    auto expr = render_elementwise(node, operand_names(c.domains.size()));
    EXPECT_TRUE(expr.ok()) << c.name << ": " << expr.error().message;
    if (expr.ok()) out.push_back({&c, "node", *expr});
    if (!c.scalar) continue;
    std::vector<std::string> operands = operand_names(c.domains.size());
    operands.insert(operands.begin() + c.scalar_position, float_literal(*c.scalar));
    auto scalar_form = render_elementwise(node, operands);
    EXPECT_TRUE(scalar_form.ok()) << c.name << ": " << scalar_form.error().message;
    if (scalar_form.ok()) out.push_back({&c, "scalar operand", *scalar_form});
  }
  return out;
}

// The host program: one function per expression, every case's inputs as bit patterns, and a main
// printing "<expression> <element> <result bits>" per line.
std::string host_program(const std::vector<Rendered>& rendered) {
  std::string text =
      "#include <cstdint>\n#include <cstdio>\n#include <cstring>\n\n"
      "#include \"tests/codegen/host_scalar_ops.h\"\n\n"
      "using namespace stitch::kernels;\n\n"
      "static float from_bits(uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; }\n"
      "static uint32_t to_bits(float f) { uint32_t b; std::memcpy(&b, &f, 4); return b; }\n\n";
  for (size_t i = 0; i < rendered.size(); ++i) {
    text += fmt::format(
        "static float e{}(float x0, float x1, float x2) {{\n  (void)x0; (void)x1; (void)x2;\n"
        "  return {};\n}}\n",
        i, rendered[i].expr);
    std::string values;
    for (size_t k = 0; k < 3; ++k) {
      std::vector<float> v = k < rendered[i].c->domains.size()
                                 ? domain_values(rendered[i].c->domains[k], static_cast<int>(k))
                                 : std::vector<float>(kCaseValues, 0.0f);
      values += "{";
      for (float x : v) values += fmt::format("0x{:08x}u, ", bits_of(x));
      values += "},";
    }
    text += fmt::format("static const uint32_t in{}[3][{}] = {{{}}};\n", i, kCaseValues, values);
  }
  text += "\nint main() {\n";
  for (size_t i = 0; i < rendered.size(); ++i)
    text += fmt::format(
        "  for (int e = 0; e < {1}; ++e)\n"
        "    std::printf(\"{0} %d %08x\\n\", e, to_bits(e{0}(from_bits(in{0}[0][e]), "
        "from_bits(in{0}[1][e]), from_bits(in{0}[2][e]))));\n",
        i, kCaseValues);
  text += "  return 0;\n}\n";
  return text;
}

TEST(OpTable, EveryRenderedOpHasARow) {
  std::set<ir::Op> covered;
  std::set<std::string> names;
  for (const OpCase& c : op_cases()) {
    covered.insert(c.op);
    EXPECT_TRUE(names.insert(c.name).second) << "two rows named " << c.name;
    EXPECT_TRUE(can_render_elementwise(c.op)) << c.name << ": the emitter does not render it";
    EXPECT_TRUE(c.reference) << c.name;
    EXPECT_FALSE(c.domains.empty()) << c.name;
  }
  int rendered = 0;
  for (int i = 0; i < ir::kOpCount; ++i) {
    const auto op = static_cast<ir::Op>(i);
    if (!can_render_elementwise(op)) continue;
    ++rendered;
    EXPECT_EQ(covered.count(op), 1u)
        << ir::op_name(op) << " is rendered by emit_elementwise.cc but has no row in "
        << "tests/codegen/op_table.cc";
  }
  EXPECT_GE(rendered, 70) << "the table check would be vacuous";
}

// What the GPU mode runs, checked here without a device: the planned rows' graph plans (one
// subtask per row, nothing fused across rows) and emits (op_table_compile_test.cc compiles it);
// every other row is still refused.
TEST(OpTable, TheTableGraphPlansAndEmits) {
  const std::vector<OpCase> planned = planned_cases();
  auto plan = plan::make_plan(op_table_graph(planned), plan::PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->subtasks.size(), planned.size());
  auto program = emit_program(*plan);
  ASSERT_TRUE(program.ok()) << program.error().message;
  for (const OpCase& c : op_cases()) {
    if (c.planner_refuses.empty()) continue;
    auto refused = plan::make_plan(op_table_graph({c}), plan::PlanOptions{});
    ASSERT_FALSE(refused.ok()) << c.name << " is planned now: clear its planner_refuses";
    EXPECT_NE(refused.error().message.find(c.planner_refuses), std::string::npos)
        << refused.error().message;
  }
}

TEST(OpTable, HostCompiledExpressionsMatchTheReferences) {
  const std::vector<Rendered> rendered = render_all();
  ASSERT_FALSE(rendered.empty());
  std::string pattern = (fs::temp_directory_path() / "stitch_op_table_XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const fs::path dir = pattern;
  ASSERT_TRUE(write_file_atomic(dir / "ops.cc", host_program(rendered)).ok());
  SystemProcessRunner runner;
  ProcessSpec compile;
  compile.argv = {STITCH_HOST_CXX, "-std=c++17", "-O1", "-Wall", "-Werror",
                  "-I" + std::string(STITCH_SOURCE_DIR), "-I" + std::string(STITCH_CUDA_INCLUDE_DIR),
                  (dir / "ops.cc").string(), "-o", (dir / "ops").string()};
  compile.timeout_s = 300;
  auto compiled = runner.run(compile);
  ASSERT_TRUE(compiled.ok()) << compiled.error().message;
  ASSERT_TRUE(compiled->succeeded()) << compiled->describe() << "\n" << compiled->stderr_text;
  ProcessSpec run;
  run.argv = {(dir / "ops").string()};
  run.timeout_s = 60;
  auto ran = runner.run(run);
  ASSERT_TRUE(ran.ok()) << ran.error().message;
  ASSERT_TRUE(ran->succeeded()) << ran->describe() << "\n" << ran->stderr_text;

  std::istringstream lines(ran->stdout_text);
  size_t index = 0, checked = 0;
  int element = 0;
  std::string hex;
  while (lines >> index >> element >> hex) {
    ASSERT_LT(index, rendered.size());
    const Rendered& r = rendered[index];
    std::vector<double> x;
    for (size_t k = 0; k < r.c->domains.size(); ++k)
      x.push_back(domain_values(r.c->domains[k], static_cast<int>(k))[element]);
    const float actual = float_of(static_cast<uint32_t>(std::stoul(hex, nullptr, 16)));
    const double reference = r.c->reference(x);
    std::string inputs;
    for (double v : x) inputs += fmt::format("{} ", v);
    EXPECT_TRUE(within(actual, reference, r.c->tolerance))
        << r.c->name << " (" << r.form << ") `" << r.expr << "` at [" << inputs << "]: " << actual
        << ", reference " << reference;
    ++checked;
  }
  EXPECT_EQ(checked, rendered.size() * kCaseValues);
  std::error_code ignored;
  fs::remove_all(dir, ignored);
}

}  // namespace
}  // namespace stitch::codegen::testing
