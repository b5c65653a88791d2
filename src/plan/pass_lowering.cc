// Pass "lower": rewrites composite ops into the primitives that fusion maps onto kernels.
//
//   captured op                         becomes
//   sum / sum.dim_IntList / amax / amin  the same primitive, reduced block by block when the dims
//   are / max / min (all dims)               not adjacent; size-1 dims are free (a view) mean /
//   mean.dim                      sum + div by the count var / var_mean (any dims) var_mean per
//   adjacent block, combined by the law of total
//                                        variance (exact, numerically stable)
//   max.dim / min.dim / argmax / argmin  kept (one dim); max.dim without used indices: amax; over a
//                                        size-1 dim: a view + zeros; argmax over all dims:
//                                        flattened
//   prod                                 flatten + prod.dim_int
//   linalg_vector_norm                   abs/mul/pow prologue + sum (or amax/amin) + sqrt/pow
//   logsumexp (kept whole at capture)    one logsumexp reduction per block of adjacent dims
//   _softmax / _log_softmax              kept over the last dim (row kernel); else amax +
//   sub + exp
//                                        + sum + div (the exp duplicated so the sum fuses it)
//   native_layer_norm                    kept (row kernel) unless mean/rstd are used, the rows
//                                        are too few and long, or only reductions read it (through
//                                        elementwise ops); then var_mean + elementwise
//   batch norm (training, functional,    over trailing dims: native_layer_norm + affine; otherwise
//   no_stats) / group norm               var_mean + rsqrt + elementwise; eval mode: elementwise
//   addmm / baddbmm with a bias that is  mm / bmm + mul + add
//   neither [n] nor the full matrix
//   mm with one output column or row     mul + sum (a matrix-vector product is memory bound)
//   sum over the features of an mm /     x · (Wᵀ summed over n) + sum(b), scaled: a matrix-vector
//   addmm used only through scalar          product (mul + sum); the weight's sums are param-only
//   multiplies / divides                    work, done once at init (lower_gemm_sum)
//   clone / same-dtype _to_copy / copy   alias / expand (functional graphs never write in place)
//   stack                                unsqueeze + cat
//   max_pool2d / avg_pool2d whose windows view [..., H/kh, W/kw, kh, kw] + one amax / mean over
//   tile the input (stride = kernel,     the window dims, read in place (lower_pooling.cc); other
//   no padding)                          pools stay whole: a direct pooling kernel (PoolSpec)
//   adaptive avg pool to size 1          sum over the spatial dims + div
//   constant_pad_nd no convolution       cats of fills around the input, a dim at a time; negative
//   absorbs                              pads a slice (lower_conv.cc)
//   convolution with a bias              convolution without it + add of the bias viewed [C, 1,
//   ...]
//                                        (fused into its epilogue; lower_conv.cc)
//   pointwise convolution (1x1..., stride bmm(W viewed [1,K,C] expanded over N, x viewed [N,C,S])
//   1, no padding, one group)            viewed [N,K,...] (+ bias): a GEMM on views, no copies
//   bmm of a sequence-major view by one   mm over the rows in memory order (batch-first input:
//   weight expanded over the batch        one 2-D GEMM over batch·seq rows), viewed back
//   (nn.MultiheadAttention's batch_first    [seq, batch, n] by a permute: no copy, no GEMM
//   in-projection)                          batched over a dim of a few rows; a [n] bias added
//                                           after it becomes the GEMM's (addmm; lower_bmm.cc)
//   mm / addmm ([n] bias) whose product  the GEMM on A's rows in the permute's order (A a view
//   is only viewed and permuted over its    the strides cannot express: its copy just changes
//   rows (MHA's out-projection, back to     order), the permute gone (lower_gemm_row_order)
//   batch-first)
//   then: nodes those rewrites left unread are dropped
//   flip over the dim of a scan whose    the scan of the flipped input with kwarg reverse
//   result only it reads                 (lower_scan.cc): one pass, the flips folded into views
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "plan/kernel_layouts.h"
#include "plan/lowering.h"
#include "plan/op_traits.h"

namespace stitch::plan {

namespace {

using ir::DType;
using ir::Op;
using lowering::Lowerer;

std::vector<int64_t> all_dims(int64_t rank) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    dims.push_back(d);
  return dims;
}

// sum / amax / amin over a dims list (sum.dim_IntList, amax, amin) or over everything.
Result<bool> lower_associative(Lowerer& lowerer, Op primitive, bool every_dim) {
  const ir::Node& node = lowerer.origin();
  ir::ValueRef x = *lowerer.tensor_arg(0, "self");
  const ir::TensorType& input = lowerer.type(x);
  std::vector<int64_t> dims = every_dim
                                  ? all_dims(input.rank())
                                  : *reduction_dims(node.arg_or_kwarg(1, "dim"), input.rank());
  const bool keepdim = every_dim ? false : bool_arg(node, 2, "keepdim", false);
  const DType out_dtype = node.outputs[0].dtype;
  const bool cast_input = node.kwarg("dtype") != nullptr && input.dtype != out_dtype;
  if (!every_dim && !cast_input && lowering::reduction_blocks(input.shape, dims).size() == 1)
    return false;
  if (cast_input) x = lowerer.cast("cast", x, out_dtype);
  lowerer.map_output(0, lowerer.reduce("", primitive, x, dims, keepdim, out_dtype));
  return true;
}

Result<bool> lower_mean(Lowerer& lowerer, bool every_dim) {
  const ir::Node& node = lowerer.origin();
  ir::ValueRef x = *lowerer.tensor_arg(0, "self");
  const ir::TensorType input = lowerer.type(x);
  std::vector<int64_t> dims = every_dim
                                  ? all_dims(input.rank())
                                  : *reduction_dims(node.arg_or_kwarg(1, "dim"), input.rank());
  const bool keepdim = every_dim ? false : bool_arg(node, 2, "keepdim", false);
  const DType dtype = node.outputs[0].dtype;
  x = lowerer.cast("cast", x, dtype);
  double count = 1;
  for (int64_t d : dims)
    count *= static_cast<double>(input.shape[d]);
  const ir::ValueRef sum = lowerer.reduce("sum", Op::sum_dim_intlist, x, dims, keepdim, dtype);
  lowerer.map_output(0, count == 1 ? sum : lowerer.scalar_binary("", Op::div_tensor, sum, count));
  return true;
}

// max.dim / min.dim / argmax / argmin: one dim (or all, flattened, for argmax/argmin).
Result<bool> lower_arg_reduction(Lowerer& lowerer) {
  const ir::Node& node = lowerer.origin();
  const ir::ValueRef x = *lowerer.tensor_arg(0, "self");
  const ir::TensorType input = lowerer.type(x);
  const bool keepdim = bool_arg(node, 2, "keepdim", false);
  const ir::Arg* dim_arg = node.arg_or_kwarg(1, "dim");
  const bool has_values = node.op == Op::max_dim || node.op == Op::min_dim;
  if (dim_arg == nullptr || dim_arg->is_none()) {  // argmax/argmin over everything
    const std::vector<int64_t> flat{input.numel()};
    const ir::ValueRef flattened = lowerer.view("flat", x, flat);
    ir::ValueRef index =
        lowerer.emit("", node.op, {ref_arg(flattened), ir::Arg{int64_t{0}}, ir::Arg{false}},
                     {contiguous_type({}, DType::int64)});
    lowerer.map_output(0, lowerer.view("keepdim", index, node.outputs[0].shape));
    return true;
  }
  const int64_t dim = *reduction_dims(dim_arg, input.rank())->begin();
  if (input.rank() > 0 && input.shape[dim] != 1) {
    // max.dim whose indices nobody reads is amax: a plain max reduction, no index to carry.
    if (!has_values || lowerer.output_used(1)) return false;
    lowerer.map_output(0, lowerer.reduce("", node.op == Op::max_dim ? Op::amax : Op::amin, x, {dim},
                                         keepdim, node.outputs[0].dtype));
    return true;
  }
  const std::vector<int64_t> shape = node.outputs[0].shape;
  if (has_values) {
    if (lowerer.output_used(0)) lowerer.map_output(0, lowerer.view("values", x, shape));
    if (lowerer.output_used(1))
      lowerer.map_output(1, lowerer.full("indices", shape, 0, DType::int64));
  } else {
    lowerer.map_output(0, lowerer.full("", shape, 0, DType::int64));
  }
  return true;
}

Result<bool> lower_prod(Lowerer& lowerer) {
  const ir::Node& node = lowerer.origin();
  const ir::ValueRef x = *lowerer.tensor_arg(0, "self");
  const ir::TensorType input = lowerer.type(x);
  if (node.op == Op::prod_dim_int) {
    const int64_t dim = *reduction_dims(node.arg_or_kwarg(1, "dim"), input.rank())->begin();
    if (input.rank() > 0 && input.shape[dim] != 1 && node.kwarg("dtype") == nullptr) return false;
    lowerer.map_output(
        0, lowerer.reduce("", Op::prod_dim_int, x, {dim}, bool_arg(node, 2, "keepdim", false),
                          node.outputs[0].dtype));
    return true;
  }
  const ir::ValueRef flattened = lowerer.view("flat", x, {input.numel()});
  lowerer.map_output(0, lowerer.emit("", Op::prod_dim_int,
                                     {ref_arg(flattened), ir::Arg{int64_t{0}}, ir::Arg{false}},
                                     {node.outputs[0]}));
  return true;
}

Result<bool> lower_var(Lowerer& lowerer) {
  const ir::Node& node = lowerer.origin();
  const ir::ValueRef x = *lowerer.tensor_arg(0, "self");
  const ir::TensorType input = lowerer.type(x);
  const auto dims = *reduction_dims(node.arg_or_kwarg(1, "dim"), input.rank());
  const double correction = double_arg(node, 2, "correction", 1.0);
  const bool keepdim = bool_arg(node, 3, "keepdim", false);
  if (node.op == Op::var_mean_correction &&
      lowering::reduction_blocks(input.shape, dims).size() == 1)
    return false;
  auto [var, mean] = lowerer.var_mean("", x, dims, correction, keepdim);
  lowerer.map_output(0, var);
  if (node.op == Op::var_mean_correction) lowerer.map_output(1, mean);
  return true;
}

Result<bool> lower_vector_norm(Lowerer& lowerer) {
  const ir::Node& node = lowerer.origin();
  ir::ValueRef x = *lowerer.tensor_arg(0, "self");
  const ir::TensorType input = lowerer.type(x);
  const double ord = double_arg(node, 1, "ord", 2.0);
  const auto dims = reduction_dims(node.arg_or_kwarg(2, "dim"), input.rank());
  if (!dims) return make_error("dim out of range");
  const bool keepdim = bool_arg(node, 3, "keepdim", false);
  const DType dtype = node.outputs[0].dtype;
  x = lowerer.cast("cast", x, dtype);
  ir::ValueRef result;
  if (std::isinf(ord)) {
    const ir::ValueRef magnitude = lowerer.unary("abs", Op::abs, x);
    result = lowerer.reduce("", ord > 0 ? Op::amax : Op::amin, magnitude, *dims, keepdim, dtype);
  } else if (ord == 2) {
    const ir::ValueRef square = lowerer.binary("square", Op::mul_tensor, x, ref_arg(x));
    const ir::ValueRef sum =
        lowerer.reduce("sum", Op::sum_dim_intlist, square, *dims, keepdim, dtype);
    result = lowerer.unary("", Op::sqrt, sum);
  } else if (ord == 1) {
    const ir::ValueRef magnitude = lowerer.unary("abs", Op::abs, x);
    result = lowerer.reduce("", Op::sum_dim_intlist, magnitude, *dims, keepdim, dtype);
  } else if (ord > 0) {
    const ir::ValueRef magnitude = lowerer.unary("abs", Op::abs, x);
    const ir::ValueRef power =
        lowerer.unary("pow", Op::pow_tensor_scalar, magnitude, {ir::Arg{ord}});
    const ir::ValueRef sum =
        lowerer.reduce("sum", Op::sum_dim_intlist, power, *dims, keepdim, dtype);
    result = lowerer.unary("", Op::pow_tensor_scalar, sum, {ir::Arg{1.0 / ord}});
  } else {
    return make_error("linalg_vector_norm with ord {} is not covered by the built-in Coder yet",
                      ord);
  }
  lowerer.map_output(0, result);
  return true;
}

// One reduction primitive per block of adjacent dims (a logsumexp of logsumexps is the logsumexp),
// computed in one pass by the reduction kernel (ReduceOp::logsumexp: the running max and the sum
// of exp(x - max)); inf and NaN as torch's.
Result<bool> lower_logsumexp(Lowerer& lowerer) {
  const ir::Node& node = lowerer.origin();
  const ir::ValueRef x = *lowerer.tensor_arg(0, "self");
  const auto dims = reduction_dims(node.arg_or_kwarg(1, "dim"), lowerer.type(x).rank());
  if (!dims) return make_error("dim out of range");
  const bool keepdim = bool_arg(node, 2, "keepdim", false);
  const DType dtype = node.outputs[0].dtype;
  const ir::ValueRef cast = lowerer.cast("cast", x, dtype);
  lowerer.map_output(0, lowerer.reduce("", Op::logsumexp, cast, *dims, keepdim, dtype));
  return true;
}

// A matrix-vector product as a multiply and a reduction: both read the matrix once, and the
// reduction runs at full bandwidth where cuBLAS would run a GEMM with n = 1.
ir::ValueRef gemv(Lowerer& lowerer, const std::string& suffix, const ir::ValueRef& a,
                  const ir::ValueRef& b, const ir::TensorType& out) {
  const int64_t k = lowerer.type(a).shape[1];
  if (out.shape[1] == 1) {  // [m, k] * [1, k] summed over k
    const ir::ValueRef row = lowerer.view(suffix + "_vector", b, {1, k});
    const ir::ValueRef product =
        lowerer.binary(suffix + "_product", Op::mul_tensor, a, ref_arg(row));
    return lowerer.reduce(suffix, Op::sum_dim_intlist, product, {1}, true, out.dtype);
  }
  // [k, 1] * [k, n] summed over k
  const ir::ValueRef column = lowerer.view(suffix + "_vector", a, {k, 1});
  const ir::ValueRef product =
      lowerer.binary(suffix + "_product", Op::mul_tensor, b, ref_arg(column));
  return lowerer.reduce(suffix, Op::sum_dim_intlist, product, {0}, true, out.dtype);
}

bool is_gemv(const Lowerer& lowerer, const std::vector<int64_t>& out) {
  return lowerer.options().lower_gemv && out.size() == 2 && (out[0] == 1 || out[1] == 1);
}

Result<bool> lower_mm(Lowerer& lowerer) {
  const ir::Node& node = lowerer.origin();
  if (!is_gemv(lowerer, node.outputs[0].shape)) return false;
  lowerer.map_output(0, gemv(lowerer, "", *lowerer.tensor_arg(0, "self"),
                             *lowerer.tensor_arg(1, "mat2"), node.outputs[0]));
  return true;
}

// addmm/baddbmm whose bias is neither a per-column vector nor the full matrix: mm/bmm, then
// alpha * product + beta * bias as elementwise ops (fused as the GEMM's epilogue).
Result<bool> lower_addmm(Lowerer& lowerer) {
  const ir::Node& node = lowerer.origin();
  const ir::ValueRef bias = *lowerer.tensor_arg(0, "self");
  const bool batched = node.op == Op::baddbmm;
  const ir::ValueRef a = *lowerer.tensor_arg(1, batched ? "batch1" : "mat1");
  const ir::ValueRef b = *lowerer.tensor_arg(2, batched ? "batch2" : "mat2");
  const std::vector<int64_t>& out = node.outputs[0].shape;
  const std::vector<int64_t>& bias_shape = lowerer.type(bias).shape;
  const double beta = double_arg(node, 3, "beta", 1.0), alpha = double_arg(node, 4, "alpha", 1.0);
  const bool vector = lowerer.type(bias).numel() == out.back() && !bias_shape.empty() &&
                      bias_shape.back() == out.back();
  const bool full = bias_shape == out;
  const bool matrix_vector = !batched && is_gemv(lowerer, out);
  // cuBLASLt's bias epilogue adds the vector unscaled; a scaled vector goes to the epilogue body.
  if (((vector && beta == 1) || full) && !matrix_vector) return false;
  const ir::TensorType product_type = contiguous_type(out, node.outputs[0].dtype);
  ir::ValueRef product = matrix_vector ? gemv(lowerer, "product", a, b, product_type)
                                       : lowerer.emit("product", batched ? Op::bmm : Op::mm,
                                                      {ref_arg(a), ref_arg(b)}, {product_type});
  if (alpha != 1) product = lowerer.scalar_binary("alpha", Op::mul_tensor, product, alpha);
  ir::ValueRef scaled_bias = bias;
  if (beta != 1) scaled_bias = lowerer.scalar_binary("beta", Op::mul_tensor, bias, beta);
  lowerer.map_output(0, lowerer.binary("", Op::add_tensor, product, ref_arg(scaled_bias)));
  return true;
}

// ---- sum over a GEMM's features ----------------------------------------------------------------
// sum_n(alpha·(x·B) + beta·b) scaled by c = c·(alpha·(x·(B·1)) + beta·sum(b)): exact in real
// arithmetic, and in FP32 as accurate as the GEMM then the sum (both add k·n products in some
// order). It turns an m·n·k GEMM into an m·k matrix-vector product plus a k·n reduction of B, which
// is param-only work (at init) when B is a weight.

struct GemmSum {
  int sum = -1;            // the sum.dim_IntList over the last dim
  int gemm = -1;           // the mm / addmm feeding it
  std::vector<int> chain;  // scalar multiplies / divides between them, in order
};

bool is_scalar_scale(const ir::Node& node) {
  if (node.op != Op::mul_tensor && node.op != Op::div_tensor && node.op != Op::mul_scalar &&
      node.op != Op::div_scalar)
    return false;
  return node.args.size() == 2 && node.args[0].is_ref() && !node.args[1].is_ref() &&
         node.args[1].as_double().has_value() && node.kwargs.empty();
}

// Its only consumer is `consumer` and it is not a graph output.
bool only_feeds(const Uses& uses, const ir::ValueRef& value, int consumer) {
  const std::vector<int>& consumers = uses.consumers(value);
  return consumers.size() == 1 && consumers[0] == consumer && !uses.is_graph_output(value);
}

std::vector<GemmSum> find_gemm_sums(const ir::Graph& graph, const Uses& uses) {
  std::vector<GemmSum> found;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& sum = graph.nodes[i];
    if (sum.op != Op::sum_dim_intlist || sum.args.size() < 2 || !sum.args[0].is_ref()) continue;
    if (!sum.kwargs.empty() || sum.outputs[0].dtype != DType::float32) continue;
    const ir::TensorType& input = graph.type_of(*sum.args[0].ref());
    const auto dims = sum.args[1].as_int_list();
    if (input.shape.size() != 2 || !dims || dims->size() != 1 ||
        ((*dims)[0] != 1 && (*dims)[0] != -1) || input.dtype != DType::float32)
      continue;
    GemmSum match;
    match.sum = static_cast<int>(i);
    ir::ValueRef value = *sum.args[0].ref();
    int consumer = match.sum;
    while (value.kind == ir::ValueRef::Kind::node && only_feeds(uses, value, consumer)) {
      const ir::Node& producer = graph.nodes[value.index];
      if (is_scalar_scale(producer)) {
        match.chain.insert(match.chain.begin(), value.index);
        consumer = value.index;
        value = *producer.args[0].ref();
        continue;
      }
      if ((producer.op == Op::mm || producer.op == Op::addmm) && producer.kwargs.empty())
        match.gemm = value.index;
      break;
    }
    if (match.gemm >= 0) found.push_back(std::move(match));
  }
  return found;
}

Result<bool> lower_gemm_sum(Lowerer& lowerer, const GemmSum& match) {
  const ir::Graph& source = lowerer.source();
  const ir::Node& gemm = source.nodes[match.gemm];
  const ir::Node& sum = source.nodes[match.sum];
  const bool addmm = gemm.op == Op::addmm;
  auto remapped = [&](size_t index) { return lowerer.rewriter().mapped(*gemm.args[index].ref()); };
  const ir::ValueRef x = remapped(addmm ? 1 : 0);
  const ir::ValueRef b_source = *gemm.args[addmm ? 2 : 1].ref();
  // B·1 as a row [1, k]: B = Wᵀ (a permute of a weight [n, k]) sums W over its rows, which reads
  // it in storage order; any other B [k, n] is summed over its columns.
  ir::ValueRef row;
  const bool transposed_weight =
      b_source.kind == ir::ValueRef::Kind::node && source.nodes[b_source.index].op == Op::permute &&
      source.nodes[b_source.index].args.size() == 2 &&
      source.nodes[b_source.index].args[1].as_int_list() == std::vector<int64_t>{1, 0};
  if (transposed_weight) {
    const ir::ValueRef w = lowerer.rewriter().mapped(*source.nodes[b_source.index].args[0].ref());
    row = lowerer.reduce("weight_sum", Op::sum_dim_intlist, w, {0}, true, DType::float32);
  } else {
    const ir::ValueRef b = lowerer.rewriter().mapped(b_source);
    const ir::ValueRef column =
        lowerer.reduce("weight_sum", Op::sum_dim_intlist, b, {1}, true, DType::float32);
    row = lowerer.view("weight_sum_row", column, {1, lowerer.type(column).shape[0]});
  }
  const ir::ValueRef product = lowerer.binary("product", Op::mul_tensor, x, ref_arg(row));
  ir::ValueRef y = lowerer.reduce("rows", Op::sum_dim_intlist, product, {1}, true, DType::float32);
  if (addmm) {
    const double beta = double_arg(gemm, 3, "beta", 1.0), alpha = double_arg(gemm, 4, "alpha", 1.0);
    const ir::ValueRef bias = remapped(0);
    const int64_t rank = static_cast<int64_t>(lowerer.type(bias).shape.size());
    ir::ValueRef bias_sum = bias;
    if (rank > 0 && lowerer.type(bias).shape.back() != 1)
      bias_sum =
          lowerer.reduce("bias_sum", Op::sum_dim_intlist, bias, {rank - 1}, true, DType::float32);
    else if (rank > 0)  // a bias broadcast along n: it adds n times its value
      bias_sum = lowerer.scalar_binary("bias_times_n", Op::mul_tensor, bias,
                                       static_cast<double>(gemm.outputs[0].shape[1]));
    if (alpha != 1) y = lowerer.scalar_binary("alpha", Op::mul_tensor, y, alpha);
    if (beta != 1) bias_sum = lowerer.scalar_binary("beta", Op::mul_tensor, bias_sum, beta);
    y = lowerer.binary("bias", Op::add_tensor, y, ref_arg(bias_sum));
  }
  for (size_t c = 0; c < match.chain.size(); ++c) {
    const ir::Node& step = source.nodes[match.chain[c]];
    y = lowerer.binary("scale" + std::to_string(c), step.op, y, step.args[1]);
  }
  const bool keepdim = sum.args.size() > 2 && sum.args[2].as_bool().value_or(false);
  lowerer.map_output(0, keepdim ? y : lowerer.view("squeeze", y, sum.outputs[0].shape));
  return true;
}

Result<bool> lower_copies(Lowerer& lowerer) {
  const ir::Node& node = lowerer.origin();
  const ir::ValueRef x = *lowerer.tensor_arg(0, "self");
  switch (node.op) {
    case Op::clone:
      lowerer.map_output(0, lowerer.emit("", Op::alias, {ref_arg(x)}, {node.outputs[0]}));
      return true;
    case Op::to_copy:
      if (lowerer.type(x).dtype != node.outputs[0].dtype) return false;
      lowerer.map_output(0, lowerer.emit("", Op::alias, {ref_arg(x)}, {node.outputs[0]}));
      return true;
    case Op::copy: {  // copy(self, src): src broadcast to self's shape, in self's dtype
      const ir::ValueRef src = *lowerer.tensor_arg(1, "src");
      ir::ValueRef result = src;
      if (lowerer.type(src).shape != node.outputs[0].shape)
        result =
            lowerer.emit("expand", Op::expand, {ref_arg(src), int_list_arg(node.outputs[0].shape)},
                         {contiguous_type(node.outputs[0].shape, lowerer.type(src).dtype)});
      result = lowerer.cast("cast", result, node.outputs[0].dtype);
      lowerer.map_output(0, lowerer.emit("", Op::alias, {ref_arg(result)}, {node.outputs[0]}));
      return true;
    }
    default:
      return false;
  }
}

Result<bool> lower_stack(Lowerer& lowerer) {
  const ir::Node& node = lowerer.origin();
  const ir::Arg* tensors = node.arg_or_kwarg(0, "tensors");
  if (tensors == nullptr || tensors->list() == nullptr) return make_error("no tensor list");
  const int64_t rank = node.outputs[0].rank();
  const int64_t dim = int_arg(node, 1, "dim", 0) < 0 ? int_arg(node, 1, "dim", 0) + rank
                                                     : int_arg(node, 1, "dim", 0);
  ir::ArgList pieces;
  int k = 0;
  for (const ir::Arg& item : *tensors->list()) {
    const ir::ValueRef piece = lowerer.rewriter().mapped(*item.ref());
    std::vector<int64_t> shape = lowerer.type(piece).shape;
    shape.insert(shape.begin() + dim, 1);
    pieces.push_back(ref_arg(lowerer.view(fmt::format("piece{}", k++), piece, shape)));
  }
  lowerer.map_output(
      0, lowerer.emit("", Op::cat, {ir::Arg{std::move(pieces)}, ir::Arg{dim}}, {node.outputs[0]}));
  return true;
}

Result<bool> lower_node(Lowerer& lowerer) {
  switch (lowerer.origin().op) {
    case Op::sum:
      return lower_associative(lowerer, Op::sum_dim_intlist, true);
    case Op::sum_dim_intlist:
      return lower_associative(lowerer, Op::sum_dim_intlist, false);
    case Op::amax:
      return lower_associative(lowerer, Op::amax, false);
    case Op::amin:
      return lower_associative(lowerer, Op::amin, false);
    case Op::max:
      return lower_associative(lowerer, Op::amax, true);
    case Op::min:
      return lower_associative(lowerer, Op::amin, true);
    case Op::mean:
      return lower_mean(lowerer, true);
    case Op::mean_dim:
      return lower_mean(lowerer, false);
    case Op::max_dim:
    case Op::min_dim:
    case Op::argmax:
    case Op::argmin:
      return lower_arg_reduction(lowerer);
    case Op::prod:
    case Op::prod_dim_int:
      return lower_prod(lowerer);
    case Op::var_correction:
    case Op::var_mean_correction:
      return lower_var(lowerer);
    case Op::linalg_vector_norm:
      return lower_vector_norm(lowerer);
    case Op::logsumexp:
      return lower_logsumexp(lowerer);
    case Op::softmax:
    case Op::log_softmax:
      return lowering::lower_softmax(lowerer);
    case Op::native_layer_norm:
      return lowering::lower_layer_norm(lowerer);
    case Op::batch_norm_functional:
    case Op::batch_norm_no_stats:
    case Op::batch_norm_no_training:
    case Op::native_batch_norm:
      return lowering::lower_batch_norm(lowerer);
    case Op::native_group_norm:
      return lowering::lower_group_norm(lowerer);
    case Op::addmm:
    case Op::baddbmm: {
      STITCH_ASSIGN_OR_RETURN(bool lowered, lower_addmm(lowerer));
      if (lowered) return true;
      return lowering::lower_gemm_row_order(lowerer);
    }
    case Op::mm: {
      STITCH_ASSIGN_OR_RETURN(bool lowered, lower_mm(lowerer));
      if (lowered) return true;
      return lowering::lower_gemm_row_order(lowerer);
    }
    case Op::bmm:
      return lowering::lower_bmm_rows(lowerer);
    case Op::clone:
    case Op::to_copy:
    case Op::copy:
      return lower_copies(lowerer);
    case Op::stack:
      return lower_stack(lowerer);
    case Op::max_pool2d_with_indices:
    case Op::avg_pool2d:
    case Op::adaptive_avg_pool2d:
    case Op::adaptive_avg_pool3d:
      return lowering::lower_pool(lowerer);
    case Op::convolution:
      return lowering::lower_convolution(lowerer);
    case Op::constant_pad_nd:
      return lowering::lower_constant_pad(lowerer);
    default:
      return false;
  }
}

}  // namespace

Result<ir::Graph> lower_composites(const ir::Graph& graph, const PlanOptions& options) {
  Lowerer lowerer(graph, options);
  // Sums over a GEMM's features: the GEMM and the scales between are dropped, the sum replaced.
  std::map<int, GemmSum> gemm_sums;
  std::set<int> dropped;
  if (options.reassociate_gemm_sums)
    for (GemmSum& match : find_gemm_sums(graph, lowerer.uses())) {
      dropped.insert(match.gemm);
      dropped.insert(match.chain.begin(), match.chain.end());
      gemm_sums.emplace(match.sum, std::move(match));
    }
  // Flips of a scan's result: the scan is dropped, the flip becomes a reverse scan.
  const std::map<int, int> flipped_scans = find_flipped_scans(graph, lowerer.uses());
  for (const auto& [flip, scan] : flipped_scans)
    dropped.insert(scan);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (dropped.count(static_cast<int>(i)) || lowerer.folded(static_cast<int>(i))) continue;
    lowerer.begin(static_cast<int>(i));
    auto match = gemm_sums.find(static_cast<int>(i));
    auto flipped = flipped_scans.find(static_cast<int>(i));
    auto lowered = match != gemm_sums.end() ? lower_gemm_sum(lowerer, match->second)
                   : flipped != flipped_scans.end()
                       ? lowering::lower_flipped_scan(lowerer, flipped->second)
                       : lower_node(lowerer);
    if (!lowered.ok())
      return lowered.error().with_context(
          fmt::format("node '{}' ({})", graph.nodes[i].id, graph.nodes[i].op_name));
    if (!*lowered) lowerer.rewriter().keep(static_cast<int>(i));
  }
  // A rewrite that reorders a GEMM's rows leaves the old view of its operand unread.
  return eliminate_dead_code(std::move(lowerer.rewriter()).finish(), nullptr);
}

}  // namespace stitch::plan
