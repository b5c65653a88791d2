// The rows of the per-op differential table (op_table.h): one or more per op the emitter renders.
// References follow PyTorch's float semantics (NaN propagation, Python remainder, round half to
// even); scalars enter them rounded to float, as the emitter's literals are.
#include "op_table.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "plan/graph_edit.h"

namespace stitch::codegen::testing {
namespace {

using ir::Arg;
using ir::Op;
using V = const std::vector<double>&;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Exactly rounded float operations (one or two roundings).
constexpr Tolerance kExact{0, 0};
constexpr Tolerance kArith{0, 2.5e-7};
constexpr Tolerance kCancel{1e-6, 2.5e-7};  // several roundings, then a cancellation
// Device and host libm functions (a few ulp), cancellations near zero covered by `abs`.
constexpr Tolerance kMath{1e-6, 4e-6};
constexpr Tolerance kLoose{1e-5, 2e-5};  // activations that compose several functions

Arg operand(int k) { return Arg{ir::ValueRef{ir::ValueRef::Kind::input, k, 0}}; }
Arg num(double v) { return Arg{v}; }
Arg text(const char* s) { return Arg{std::string(s)}; }
double f32(double v) { return static_cast<double>(static_cast<float>(v)); }
double boolean(bool b) { return b ? 1.0 : 0.0; }

OpCase make(std::string name, Op op, int operands, std::vector<Arg> extra,
            std::function<double(V)> reference, Tolerance tolerance,
            std::vector<Domain> domains = {}) {
  OpCase c;
  c.name = std::move(name);
  c.op = op;
  for (int k = 0; k < operands; ++k) c.args.push_back(operand(k));
  for (Arg& arg : extra) c.args.push_back(std::move(arg));
  c.reference = std::move(reference);
  c.tolerance = tolerance;
  c.domains = domains.empty() ? std::vector<Domain>(operands, Domain::any) : std::move(domains);
  return c;
}

OpCase unary(std::string name, Op op, double (*f)(double), Tolerance tol,
             Domain domain = Domain::any) {
  return make(std::move(name), op, 1, {}, [f](V x) { return f(x[0]); }, tol, {domain});
}

OpCase predicate(OpCase c) {
  c.out_dtype = ir::DType::boolean;
  return c;
}

// A Tensor-Scalar op whose number is args[1] (also rendered in operand position).
OpCase with_scalar(std::string name, Op op, double scalar, std::function<double(double, double)> f,
                   Tolerance tol, Domain domain = Domain::any) {
  const double s = f32(scalar);
  OpCase c = make(std::move(name), op, 1, {num(scalar)}, [f, s](V x) { return f(x[0], s); }, tol,
                  {domain});
  c.scalar = scalar;
  return c;
}

double relu(double x) { return x > 0 ? x : (std::isnan(x) ? x : 0.0); }
double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double softplus(double x, double beta, double threshold) {
  return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
}
double clamp(double x, double lo, double hi) {
  if (std::isnan(x) || std::isnan(lo) || std::isnan(hi)) return kNan;
  return std::min(std::max(x, lo), hi);
}
double python_remainder(double a, double b) {
  const double r = std::fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
double maximum(double a, double b) { return std::isnan(a) || std::isnan(b) ? kNan : std::max(a, b); }
double minimum(double a, double b) { return std::isnan(a) || std::isnan(b) ? kNan : std::min(a, b); }
double sign(double x) { return std::isnan(x) ? x : (x > 0) - (x < 0); }
// erf⁻¹ by Newton's method on std::erf (the reference need not be fast).
double erfinv(double y) {
  if (y <= -1) return y == -1 ? -kInf : kNan;
  if (y >= 1) return y == 1 ? kInf : kNan;
  double x = 0;
  for (int i = 0; i < 100; ++i) x -= (std::erf(x) - y) / (2 / std::sqrt(M_PI) * std::exp(-x * x));
  return x;
}

void unary_rows(std::vector<OpCase>& t) {
  t.push_back(unary("abs", Op::abs, [](double x) { return std::fabs(x); }, kExact, Domain::special));
  t.push_back(unary("neg", Op::neg, [](double x) { return -x; }, kExact, Domain::special));
  t.push_back(unary("exp", Op::exp, [](double x) { return std::exp(x); }, kMath));
  t.push_back(unary("exp2", Op::exp2, [](double x) { return std::exp2(x); }, kMath));
  t.push_back(unary("expm1", Op::expm1, [](double x) { return std::expm1(x); }, kMath));
  t.push_back(unary("log", Op::log, [](double x) { return std::log(x); }, kMath, Domain::positive));
  t.push_back(unary("log1p", Op::log1p, [](double x) { return std::log1p(x); }, kMath, Domain::unit));
  t.push_back(unary("log2", Op::log2, [](double x) { return std::log2(x); }, kMath, Domain::positive));
  t.push_back(unary("log10", Op::log10, [](double x) { return std::log10(x); }, kMath, Domain::positive));
  t.push_back(unary("sqrt", Op::sqrt, [](double x) { return std::sqrt(x); }, kArith, Domain::positive));
  t.push_back(unary("rsqrt", Op::rsqrt, [](double x) { return 1 / std::sqrt(x); }, kMath, Domain::positive));
  t.push_back(unary("reciprocal", Op::reciprocal, [](double x) { return 1 / x; }, kArith, Domain::nonzero));
  t.push_back(unary("sin", Op::sin, [](double x) { return std::sin(x); }, kMath));
  t.push_back(unary("cos", Op::cos, [](double x) { return std::cos(x); }, kMath));
  t.push_back(unary("tan", Op::tan, [](double x) { return std::tan(x); }, kMath, Domain::unit));
  t.push_back(unary("asin", Op::asin, [](double x) { return std::asin(x); }, kMath, Domain::unit));
  t.push_back(unary("acos", Op::acos, [](double x) { return std::acos(x); }, kMath, Domain::unit));
  t.push_back(unary("atan", Op::atan, [](double x) { return std::atan(x); }, kMath));
  t.push_back(unary("sinh", Op::sinh, [](double x) { return std::sinh(x); }, kMath));
  t.push_back(unary("cosh", Op::cosh, [](double x) { return std::cosh(x); }, kMath));
  t.push_back(unary("tanh", Op::tanh, [](double x) { return std::tanh(x); }, kMath));
  t.push_back(unary("asinh", Op::asinh, [](double x) { return std::asinh(x); }, kMath));
  t.push_back(unary("acosh", Op::acosh, [](double x) { return std::acosh(x); }, kMath, Domain::above_one));
  t.push_back(unary("atanh", Op::atanh, [](double x) { return std::atanh(x); }, kMath, Domain::unit));
  t.push_back(unary("erf", Op::erf, [](double x) { return std::erf(x); }, kMath));
  t.push_back(unary("erfinv", Op::erfinv, erfinv, kMath, Domain::unit));
  t.push_back(unary("floor", Op::floor, [](double x) { return std::floor(x); }, kExact, Domain::halves));
  t.push_back(unary("ceil", Op::ceil, [](double x) { return std::ceil(x); }, kExact, Domain::halves));
  t.push_back(unary("round", Op::round, [](double x) { return std::nearbyint(x); }, kExact, Domain::halves));
  t.push_back(unary("trunc", Op::trunc, [](double x) { return std::trunc(x); }, kExact, Domain::halves));
  t.push_back(unary("sign", Op::sign, sign, kExact, Domain::special));
  t.push_back(predicate(unary("isnan", Op::isnan, [](double x) { return boolean(std::isnan(x)); }, kExact, Domain::special)));
  t.push_back(predicate(unary("isinf", Op::isinf, [](double x) { return boolean(std::isinf(x)); }, kExact, Domain::special)));
  t.push_back(predicate(unary("logical_not", Op::logical_not, [](double x) { return boolean(x == 0); }, kExact, Domain::special)));
  // bitwise_not renders for bool data only (a mask's `~`), where it is logical not: its rendering
  // is checked on the host here; the table's graph gives float32 inputs, which bitwise_not's bool
  // result does not type-check against (captured graphs give it a bool mask, e.g. `~tril`).
  OpCase bitwise_not = predicate(unary("bitwise_not", Op::bitwise_not, [](double x) { return boolean(x == 0); }, kExact, Domain::special));
  bitwise_not.planner_refuses = "captured as [16] bool but its arguments give [16] float32";
  t.push_back(bitwise_not);
}

void activation_rows(std::vector<OpCase>& t) {
  t.push_back(unary("sigmoid", Op::sigmoid, sigmoid, kMath));
  t.push_back(unary("relu", Op::relu, relu, kExact, Domain::special));
  t.push_back(unary("silu", Op::silu, [](double x) { return x * sigmoid(x); }, kMath));
  t.push_back(unary("mish", Op::mish, [](double x) { return x * std::tanh(softplus(x, 1, 20)); }, kLoose));
  t.push_back(unary("hardsigmoid", Op::hardsigmoid, [](double x) { return clamp(x / 6 + 0.5, 0, 1); }, kArith));
  t.push_back(unary("hardswish", Op::hardswish, [](double x) { return x * clamp(x + 3, 0, 6) / 6; }, kArith));
  t.push_back(unary("gelu_erf", Op::gelu,
                    [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, kLoose));
  OpCase gelu_tanh = unary("gelu_tanh", Op::gelu, [](double x) {
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  }, kLoose);
  gelu_tanh.kwargs = {{"approximate", text("tanh")}};
  t.push_back(gelu_tanh);
  t.push_back(make("elu", Op::elu, 1, {num(0.5), num(1.5), num(2.0)}, [](V x) {
    return x[0] > 0 ? 1.5 * x[0] : 1.5 * 0.5 * (std::exp(2 * x[0]) - 1);
  }, kMath));
  t.push_back(make("elu_default", Op::elu, 1, {}, [](V x) {
    return x[0] > 0 ? x[0] : std::exp(x[0]) - 1;
  }, kMath));
  t.push_back(make("leaky_relu", Op::leaky_relu, 1, {num(0.2)},
                   [](V x) { return x[0] > 0 ? x[0] : x[0] * f32(0.2); }, kArith));
  t.push_back(make("leaky_relu_default", Op::leaky_relu, 1, {},
                   [](V x) { return x[0] > 0 ? x[0] : x[0] * f32(0.01); }, kArith));
  t.push_back(make("hardtanh", Op::hardtanh, 1, {num(-2), num(2.5)},
                   [](V x) { return clamp(x[0], -2, 2.5); }, kExact));
  t.push_back(make("softplus", Op::softplus, 1, {num(2), num(3)},
                   [](V x) { return softplus(x[0], 2, 3); }, kMath));
  t.push_back(make("softplus_default", Op::softplus, 1, {},
                   [](V x) { return softplus(x[0], 1, 20); }, kMath));
  t.push_back(make("clamp", Op::clamp, 1, {num(-1), num(1.5)},
                   [](V x) { return clamp(x[0], -1, 1.5); }, kExact, {Domain::special}));
  t.push_back(make("clamp_min", Op::clamp, 1, {num(0.25)},
                   [](V x) { return clamp(x[0], 0.25, kInf); }, kExact, {Domain::special}));
  t.push_back(make("clamp_max", Op::clamp, 1, {Arg{}, num(0.25)},
                   [](V x) { return clamp(x[0], -kInf, 0.25); }, kExact, {Domain::special}));
  for (double e : {2.0, 3.0, 0.5, -1.0, 1.0, 1.7})
    t.push_back(make("pow_tensor_scalar_" + std::to_string(static_cast<int>(e * 10)),
                     Op::pow_tensor_scalar, 1, {num(e)},
                     [e](V x) { return e == 2 ? x[0] * x[0] : std::pow(x[0], f32(e)); },
                     e == 1.7 ? kMath : kArith, {Domain::positive}));
  OpCase to_float = make("to_copy_float", Op::to_copy, 1, {}, [](V x) { return x[0]; }, kExact);
  to_float.kwargs = {{"dtype", Arg{ir::DType::float32}}};
  t.push_back(to_float);
  OpCase to_bool = predicate(make("to_copy_bool", Op::to_copy, 1, {},
                                  [](V x) { return boolean(x[0] != 0); }, kExact, {Domain::special}));
  to_bool.kwargs = {{"dtype", Arg{ir::DType::boolean}}};
  t.push_back(to_bool);
  OpCase to_int = make("to_copy_int64", Op::to_copy, 1, {}, [](V x) { return std::trunc(x[0]); },
                       kExact, {Domain::halves});
  to_int.kwargs = {{"dtype", Arg{ir::DType::int64}}};
  to_int.out_dtype = ir::DType::int64;
  t.push_back(to_int);
}

void arithmetic_rows(std::vector<OpCase>& t) {
  t.push_back(make("add_tensor", Op::add_tensor, 2, {}, [](V x) { return x[0] + x[1]; }, kArith));
  OpCase add_alpha = make("add_tensor_alpha", Op::add_tensor, 2, {},
                          [](V x) { return x[0] + f32(0.5) * x[1]; }, kArith);
  add_alpha.kwargs = {{"alpha", num(0.5)}};
  t.push_back(add_alpha);
  OpCase sub_alpha = make("sub_tensor_alpha", Op::sub_tensor, 2, {},
                          [](V x) { return x[0] - 2 * x[1]; }, kArith);
  sub_alpha.kwargs = {{"alpha", num(2)}};
  t.push_back(sub_alpha);
  t.push_back(make("sub_tensor", Op::sub_tensor, 2, {}, [](V x) { return x[0] - x[1]; }, kArith));
  t.push_back(with_scalar("add_scalar", Op::add_scalar, 0.75, [](double a, double s) { return a + s; }, kArith));
  t.push_back(with_scalar("sub_scalar", Op::sub_scalar, 0.75, [](double a, double s) { return a - s; }, kArith));
  t.push_back(with_scalar("rsub_scalar", Op::rsub_scalar, 1.0, [](double a, double s) { return s - a; }, kArith));
  t.push_back(make("rsub_scalar_alpha", Op::rsub_scalar, 1, {num(1.0), num(3.0)},
                   [](V x) { return 1 - 3 * x[0]; }, kArith));
  t.push_back(make("mul_tensor", Op::mul_tensor, 2, {}, [](V x) { return x[0] * x[1]; }, kArith));
  t.push_back(make("div_tensor", Op::div_tensor, 2, {}, [](V x) { return x[0] / x[1]; }, kArith,
                   {Domain::any, Domain::nonzero}));
  t.push_back(with_scalar("mul_scalar", Op::mul_scalar, 0.1, [](double a, double s) { return a * s; }, kArith));
  t.push_back(with_scalar("div_scalar", Op::div_scalar, 3.0, [](double a, double s) { return a / s; }, kArith));
  t.push_back(make("div_tensor_mode_none", Op::div_tensor_mode, 2, {},
                   [](V x) { return x[0] / x[1]; }, kArith, {Domain::any, Domain::nonzero}));
  OpCase div_trunc = make("div_tensor_mode_trunc", Op::div_tensor_mode, 2, {},
                          [](V x) { return std::trunc(f32(x[0] / x[1])); }, kExact,
                          {Domain::any, Domain::nonzero});
  div_trunc.kwargs = {{"rounding_mode", text("trunc")}};
  t.push_back(div_trunc);
  OpCase div_floor = make("div_tensor_mode_floor", Op::div_tensor_mode, 2, {},
                          [](V x) { return std::floor(f32(x[0] / x[1])); }, kExact,
                          {Domain::any, Domain::nonzero});
  div_floor.kwargs = {{"rounding_mode", text("floor")}};
  t.push_back(div_floor);
  t.push_back(make("pow_tensor_tensor", Op::pow_tensor_tensor, 2, {},
                   [](V x) { return std::pow(x[0], x[1]); }, kMath, {Domain::positive, Domain::any}));
  OpCase pow_scalar = make("pow_scalar", Op::pow_scalar, 1, {}, [](V x) {
    return std::pow(f32(2.5), x[0]);
  }, kMath);
  pow_scalar.args = {num(2.5), operand(0)};  // aten.pow.Scalar(Scalar self, Tensor exponent)
  pow_scalar.scalar = 2.5;
  pow_scalar.scalar_position = 0;
  t.push_back(pow_scalar);
  t.push_back(make("fmod_tensor", Op::fmod_tensor, 2, {}, [](V x) { return std::fmod(x[0], x[1]); },
                   kExact, {Domain::any, Domain::nonzero}));
  t.push_back(with_scalar("fmod_scalar", Op::fmod_scalar, 0.75, [](double a, double s) { return std::fmod(a, s); }, kExact));
  t.push_back(make("remainder_tensor", Op::remainder_tensor, 2, {},
                   [](V x) { return python_remainder(x[0], x[1]); }, kArith,
                   {Domain::any, Domain::nonzero}));
  t.push_back(with_scalar("remainder_scalar", Op::remainder_scalar, -0.75,
                          [](double a, double s) { return python_remainder(a, s); }, kArith));
  t.push_back(make("atan2", Op::atan2, 2, {}, [](V x) { return std::atan2(x[0], x[1]); }, kMath));
  t.push_back(make("maximum", Op::maximum, 2, {}, [](V x) { return maximum(x[0], x[1]); }, kExact,
                   {Domain::special, Domain::any}));
  t.push_back(make("minimum", Op::minimum, 2, {}, [](V x) { return minimum(x[0], x[1]); }, kExact,
                   {Domain::special, Domain::any}));
  t.push_back(make("prelu_kernel", Op::prelu_kernel, 2, {},
                   [](V x) { return x[0] > 0 ? x[0] : x[1] * x[0]; }, kArith));
}

void comparison_rows(std::vector<OpCase>& t) {
  using Cmp = bool (*)(double, double);
  const std::vector<std::tuple<const char*, Op, Op, Cmp>> compares = {
      {"eq", Op::eq_tensor, Op::eq_scalar, [](double a, double b) { return a == b; }},
      {"ne", Op::ne_tensor, Op::ne_scalar, [](double a, double b) { return a != b; }},
      {"lt", Op::lt_tensor, Op::lt_scalar, [](double a, double b) { return a < b; }},
      {"le", Op::le_tensor, Op::le_scalar, [](double a, double b) { return a <= b; }},
      {"gt", Op::gt_tensor, Op::gt_scalar, [](double a, double b) { return a > b; }},
      {"ge", Op::ge_tensor, Op::ge_scalar, [](double a, double b) { return a >= b; }}};
  for (const auto& [name, tensor_op, scalar_op, cmp] : compares) {
    t.push_back(predicate(make(std::string(name) + "_tensor", tensor_op, 2, {},
                               [cmp](V x) { return boolean(cmp(x[0], x[1])); }, kExact,
                               {Domain::special, Domain::halves})));
    t.push_back(predicate(with_scalar(std::string(name) + "_scalar", scalar_op, 0.5,
                                      [cmp](double a, double s) { return boolean(cmp(a, s)); },
                                      kExact, Domain::halves)));
  }
  t.push_back(predicate(make("logical_and", Op::logical_and, 2, {},
                             [](V x) { return boolean(x[0] != 0 && x[1] != 0); }, kExact,
                             {Domain::booleans, Domain::special})));
  t.push_back(predicate(make("logical_or", Op::logical_or, 2, {},
                             [](V x) { return boolean(x[0] != 0 || x[1] != 0); }, kExact,
                             {Domain::booleans, Domain::special})));
  t.push_back(predicate(make("logical_xor", Op::logical_xor, 2, {},
                             [](V x) { return boolean((x[0] != 0) != (x[1] != 0)); }, kExact,
                             {Domain::booleans, Domain::special})));
}

void ternary_rows(std::vector<OpCase>& t) {
  t.push_back(make("where_self", Op::where_self, 3, {},
                   [](V x) { return x[0] != 0 ? x[1] : x[2]; }, kExact,
                   {Domain::booleans, Domain::any, Domain::special}));
  t.push_back(make("clamp_tensor", Op::clamp_tensor, 3, {},
                   [](V x) { return clamp(x[0], x[1], x[2]); }, kExact,
                   {Domain::any, Domain::unit, Domain::above_one}));
  OpCase clamp_min = make("clamp_tensor_min", Op::clamp_tensor, 2, {Arg{}},
                          [](V x) { return clamp(x[0], x[1], kInf); }, kExact,
                          {Domain::any, Domain::unit});
  t.push_back(clamp_min);
  OpCase clamp_max = make("clamp_tensor_max", Op::clamp_tensor, 1, {Arg{}, operand(1)},
                          [](V x) { return clamp(x[0], -kInf, x[1]); }, kExact,
                          {Domain::any, Domain::unit});
  t.push_back(clamp_max);
  OpCase addcmul = make("addcmul", Op::addcmul, 3, {},
                        [](V x) { return x[0] + f32(0.5) * x[1] * x[2]; }, kArith);
  addcmul.kwargs = {{"value", num(0.5)}};
  t.push_back(addcmul);
  t.push_back(make("lerp_tensor", Op::lerp_tensor, 3, {},
                   [](V x) { return x[0] + x[2] * (x[1] - x[0]); }, kCancel,
                   {Domain::any, Domain::any, Domain::unit}));
}

}  // namespace

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = [] {
    std::vector<OpCase> t;
    unary_rows(t);
    activation_rows(t);
    arithmetic_rows(t);
    comparison_rows(t);
    ternary_rows(t);
    return t;
  }();
  return cases;
}

std::vector<OpCase> planned_cases() {
  std::vector<OpCase> planned;
  for (const OpCase& c : op_cases())
    if (c.planner_refuses.empty()) planned.push_back(c);
  return planned;
}

ir::Node case_node(const OpCase& c, const std::vector<int64_t>& shape) {
  ir::Node node;
  node.id = "n_" + c.name;
  node.op = c.op;
  node.op_name = std::string(ir::op_name(c.op));
  node.args = c.args;
  node.kwargs = c.kwargs;
  ir::TensorType type;
  type.dtype = c.out_dtype;
  type.shape = shape;
  type.strides = ir::contiguous_strides(shape);
  node.outputs = {type};
  return node;
}

// One graph holding every row: row r reads inputs x<r>_<k> and writes output r.
ir::Graph op_table_graph(const std::vector<OpCase>& cases) {
  ir::Graph graph;
  graph.task.name = "op_table";
  for (const OpCase& c : cases) {
    const int first_input = static_cast<int>(graph.inputs.size());
    for (size_t k = 0; k < c.domains.size(); ++k)
      graph.inputs.push_back({fmt::format("x_{}_{}", c.name, k), ir::InputKind::user,
                              plan::contiguous_type({kCaseValues}, ir::DType::float32), "fixed",
                              ""});
    ir::Node node = case_node(c);
    for (ir::Arg& arg : node.args)
      if (auto* ref = std::get_if<ir::ValueRef>(&arg.value)) ref->index += first_input;
    graph.nodes.push_back(std::move(node));
    graph.outputs.push_back(
        {ir::ValueRef::Kind::node, static_cast<int32_t>(graph.nodes.size() - 1), 0});
  }
  return graph;
}

std::vector<float> domain_values(Domain domain, int operand) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v;
  switch (domain) {
    case Domain::any:
      v = {-3.5f, -2.25f, -1, -0.75f, -0.5f, -0.125f, -0.0f, 0, 0.1f, 0.3f, 0.5f, 1, 1.5f, 2, 2.5f, 3.75f};
      break;
    case Domain::nonzero:
      v = {-3.5f, -2.25f, -1, -0.75f, -0.5f, -0.125f, 0.1f, 0.3f, 0.5f, 1, 1.5f, 2, 2.5f, 3.75f, -4, 7};
      break;
    case Domain::positive:
      v = {0.01f, 0.1f, 0.25f, 0.5f, 0.75f, 1, 1.25f, 1.5f, 2, 3, 4.5f, 7, 10, 33, 100, 1000};
      break;
    case Domain::unit:
      v = {-0.99f, -0.9f, -0.75f, -0.5f, -0.3f, -0.1f, -0.01f, 0, 0.01f, 0.1f, 0.2f, 0.3f, 0.5f, 0.75f, 0.9f, 0.99f};
      break;
    case Domain::above_one:
      v = {1, 1.01f, 1.1f, 1.25f, 1.5f, 2, 2.5f, 3, 4, 5, 7.5f, 10, 20, 33, 50, 100};
      break;
    case Domain::special:
      v = {nan, inf, -inf, -0.0f, 0, 1, -1, 2.5f, -2.5f, 1e-30f, -1e30f, 3, -3, 0.5f, -0.5f, 100};
      break;
    case Domain::halves:
      v = {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 3.5f, -3.49f, 0.49f, 1.51f, -0.0f, 0, 7, -7, 0.75f, -1.25f};
      break;
    case Domain::booleans:
      v = {0, 1, 1, 0, 0, 0, 1, 1, 1, 0, 1, 0, 0, 1, 0, 1};
      break;
  }
  std::rotate(v.begin(), v.begin() + (5 * operand) % static_cast<int>(v.size()), v.end());
  return v;
}

bool within(float actual, double reference, const Tolerance& tolerance) {
  if (std::isnan(reference)) return std::isnan(actual);
  if (std::isinf(reference) || std::isinf(actual)) return static_cast<double>(actual) == reference;
  return std::fabs(static_cast<double>(actual) - reference) <=
         tolerance.abs + tolerance.rel * std::fabs(reference);
}

}  // namespace stitch::codegen::testing
