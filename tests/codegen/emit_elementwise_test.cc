// emit_<op> renderings: what each op family becomes, scalar operands in both forms the Planner may
// give, float literals that round-trip, and refusals that name the node.
#include "codegen/emit_elementwise.h"

#include <cmath>
#include <cstdlib>

#include <gtest/gtest.h>

namespace stitch::codegen {
namespace {

ir::Node node(ir::Op op, std::vector<ir::Arg> args = {},
              std::vector<std::pair<std::string, ir::Arg>> kwargs = {}) {
  ir::Node n;
  n.id = "n1";
  n.op = op;
  n.op_name = std::string(ir::op_name(op));
  n.args = std::move(args);
  n.kwargs = std::move(kwargs);
  return n;
}

ir::Arg ref() { return ir::Arg{ir::ValueRef{ir::ValueRef::Kind::input, 0, 0}}; }
ir::Arg num(double v) { return ir::Arg{v}; }
ir::Arg text(const char* s) { return ir::Arg{std::string(s)}; }

std::string render(const ir::Node& n, std::vector<std::string> operands) {
  auto result = render_elementwise(n, operands);
  EXPECT_TRUE(result.ok()) << result.error().message;
  return result.ok() ? *result : "";
}

TEST(FloatLiteral, RoundTripsAndSpellsSpecialValues) {
  EXPECT_EQ(float_literal(0.5), "0.5f");
  EXPECT_EQ(float_literal(2.0), "2.0f");
  EXPECT_EQ(float_literal(-0.0), "-0.0f");
  EXPECT_EQ(float_literal(INFINITY), "__int_as_float(0x7f800000)");
  EXPECT_EQ(float_literal(-INFINITY), "__int_as_float(0xff800000)");
  EXPECT_EQ(float_literal(NAN), "__int_as_float(0x7fffffff)");
  for (double v : {0.1, 1e-5, 3.14159265358979, 1e30, -7.25e-20}) {
    std::string text = float_literal(v);
    ASSERT_EQ(text.back(), 'f');
    EXPECT_EQ(std::strtof(text.substr(0, text.size() - 1).c_str(), nullptr), static_cast<float>(v))
        << text;
  }
}

TEST(RenderElementwise, ActivationsUseThePyTorchFormulas) {
  EXPECT_EQ(render(node(ir::Op::relu, {ref()}), {"a"}), "op_relu(a)");
  EXPECT_EQ(render(node(ir::Op::gelu, {ref()}), {"a"}), "op_gelu_erf(a)");
  EXPECT_EQ(render(node(ir::Op::gelu, {ref()}, {{"approximate", text("tanh")}}), {"a"}),
            "op_gelu_tanh(a)");
  EXPECT_EQ(render(node(ir::Op::leaky_relu, {ref(), num(0.2)}), {"a"}), "op_leaky_relu(a, 0.2f)");
  EXPECT_EQ(render(node(ir::Op::leaky_relu, {ref()}), {"a"}), "op_leaky_relu(a, 0.01f)");
  EXPECT_EQ(render(node(ir::Op::hardtanh, {ref(), num(-2.0), num(2.0)}), {"a"}),
            "op_clamp(a, -2.0f, 2.0f)");
  EXPECT_EQ(render(node(ir::Op::softplus, {ref()}), {"a"}), "op_softplus(a, 1.0f, 20.0f)");
  EXPECT_EQ(render(node(ir::Op::clamp, {ref(), ir::Arg{}, num(6.0)}), {"a"}),
            "op_clamp_max(a, 6.0f)");
  EXPECT_EQ(render(node(ir::Op::neg, {ref()}), {"-1.0f"}), "(-(-1.0f))") << "never --";
}

TEST(RenderElementwise, BinaryOpsWithAlphaAndScalarOperands) {
  EXPECT_EQ(render(node(ir::Op::add_tensor, {ref(), ref()}), {"a", "b"}), "(a + b)");
  EXPECT_EQ(render(node(ir::Op::sub_tensor, {ref(), ref()}, {{"alpha", num(2.0)}}), {"a", "b"}),
            "(a - (2.0f * b))");
  // Tensor-Scalar ops: the scalar read from the node, or given as a rendered operand.
  EXPECT_EQ(render(node(ir::Op::mul_scalar, {ref(), num(0.5)}), {"a"}), "(a * 0.5f)");
  EXPECT_EQ(render(node(ir::Op::mul_scalar, {ref(), num(0.5)}), {"a", "0.5f"}), "(a * 0.5f)");
  EXPECT_EQ(render(node(ir::Op::eq_scalar, {ref(), num(1.0)}), {"a", "1.0f"}), "op_bool(a == 1.0f)");
  EXPECT_EQ(render(node(ir::Op::rsub_scalar, {ref(), num(1.0)}), {"a"}), "(1.0f - a)");
  EXPECT_EQ(render(node(ir::Op::div_tensor_mode, {ref(), ref()}, {{"rounding_mode", text("floor")}}),
                   {"a", "b"}),
            "floorf(a / b)");
  EXPECT_EQ(render(node(ir::Op::maximum, {ref(), ref()}), {"a", "b"}), "op_maximum(a, b)");
  EXPECT_EQ(render(node(ir::Op::where_self, {ref(), ref(), ref()}), {"c", "a", "b"}),
            "(c != 0.0f ? a : b)");
}

TEST(RenderElementwise, RefusesWhatItDoesNotKnowNamingTheNode) {
  auto unknown = render_elementwise(node(ir::Op::mm, {ref(), ref()}), {"a", "b"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("n1"), std::string::npos);
  auto arity = render_elementwise(node(ir::Op::add_tensor, {ref(), ref()}), {"a"});
  ASSERT_FALSE(arity.ok());
  EXPECT_NE(arity.error().message.find("expected 2"), std::string::npos);
  auto mode = render_elementwise(
      node(ir::Op::gelu, {ref()}, {{"approximate", text("cubic")}}), {"a"});
  EXPECT_FALSE(mode.ok());
  EXPECT_FALSE(can_render_elementwise(ir::Op::convolution));
  EXPECT_TRUE(can_render_elementwise(ir::Op::sigmoid));
}

}  // namespace
}  // namespace stitch::codegen
