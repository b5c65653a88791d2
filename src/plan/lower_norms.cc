// Lowering of the normalization family (softmax, layer/batch/group norm); see pass_lowering.cc for
// the table. A normalization whose statistics run over trailing dims becomes native_layer_norm
// (one row kernel) when its row shape suits a row kernel; otherwise, or (layer and group norm)
// where only reductions read its result, var_mean + elementwise.
#include <limits>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "plan/access.h"
#include "plan/kernel_layouts.h"
#include "plan/lowering.h"
#include "plan/op_traits.h"

namespace stitch::plan::lowering {

namespace {

using ir::DType;
using ir::Op;

// One block per row: with fewer rows than SMs, long rows leave the GPU idle.
bool row_kernel_suits(const Lowerer& lowerer, int64_t rows, int64_t cols) {
  return rows >= lowerer.options().peaks.sms || cols <= lowerer.options().row_kernel_max_cols;
}

// Views that keep the elements in order (reshapes, size-1 dims): an elementwise chain read
// through them still fuses into a reduction's prologue. A permuted one (Swin's final LayerNorm,
// transposed, then averaged over tokens) left the normalization as a pass of its own.
bool keeps_order(ir::Op op) {
  switch (op) {
    case ir::Op::view:
    case ir::Op::unsafe_view:
    case ir::Op::reshape:
    case ir::Op::squeeze_dim:
    case ir::Op::squeeze_dims:
    case ir::Op::unsqueeze:
    case ir::Op::alias:
      return true;
    default:
      return false;
  }
}

// Every use of output 0 of the node being lowered ends, through elementwise ops and order-keeping
// views only, in a reduction (a mean, a logsumexp, ...): nothing reads the value itself but as a
// reduction's prologue would.
bool output_feeds_only_reductions(const Lowerer& lowerer) {
  const ir::Graph& graph = lowerer.source();
  const Uses& uses = lowerer.uses();
  std::vector<ir::ValueRef> pending{node_value(lowerer.origin_index())};
  std::set<int> seen;
  while (!pending.empty()) {
    const ir::ValueRef value = pending.back();
    pending.pop_back();
    if (uses.is_graph_output(value) || uses.consumers(value).empty()) return false;
    for (int consumer : uses.consumers(value)) {
      if (!seen.insert(consumer).second) continue;
      const ir::Op op = graph.nodes[consumer].op;
      if (ir::op_category(op) == ir::OpCategory::reduction) continue;
      if (!is_elementwise(op) && !keeps_order(op)) return false;
      pending.push_back(node_value(consumer));
    }
  }
  return true;
}

// A layer or group norm as one row kernel (statistics, then the normalized row written out), or
// as a statistics reduction with the normalization left elementwise. The row kernel reads a row
// once where it fits the block's registers, twice beyond (the loop strategy). Where the normalized
// tensor only feeds reductions, the elementwise normalization fuses into their prologues and the
// tensor is never written: KernelBench's GroupNorm over 63504 elements per group followed by a
// logsumexp over channels moves 1.6 GB instead of 3.1.
bool norm_row_kernel_suits(const Lowerer& lowerer, int64_t rows, int64_t cols) {
  return row_kernel_suits(lowerer, rows, cols) && !output_feeds_only_reductions(lowerer);
}

ir::ValueRef normalize(Lowerer& lowerer, const ir::ValueRef& x, const ir::ValueRef& mean,
                       const ir::ValueRef& rstd) {
  const ir::ValueRef centered = lowerer.binary("centered", Op::sub_tensor, x, ref_arg(mean));
  return lowerer.binary("normalized", Op::mul_tensor, centered, ref_arg(rstd));
}

ir::ValueRef reciprocal_std(Lowerer& lowerer, const ir::ValueRef& var, double eps) {
  const ir::ValueRef shifted = lowerer.scalar_binary("var_eps", Op::add_tensor, var, eps);
  return lowerer.unary("rstd", Op::rsqrt, shifted);
}

// y * weight + bias with per-channel [C] params viewed as [C, 1, ...] against [N, C, ...].
ir::ValueRef channel_affine(Lowerer& lowerer, ir::ValueRef y, std::optional<ir::ValueRef> weight,
                            std::optional<ir::ValueRef> bias, int64_t rank) {
  auto channel_view = [&](const std::string& suffix, const ir::ValueRef& param) {
    std::vector<int64_t> shape{lowerer.type(param).numel()};
    for (int64_t d = 2; d < rank; ++d)
      shape.push_back(1);
    return lowerer.view(suffix, param, shape);
  };
  if (weight)
    y = lowerer.binary("scaled", Op::mul_tensor, y, ref_arg(channel_view("weight", *weight)));
  if (bias) y = lowerer.binary("shifted", Op::add_tensor, y, ref_arg(channel_view("bias", *bias)));
  return y;
}

}  // namespace

Result<bool> lower_softmax(Lowerer& lowerer) {
  const ir::Node& node = lowerer.origin();
  if (auto rows = row_geometry(lowerer.source(), node);
      rows && row_kernel_suits(lowerer, rows->rows, rows->cols))
    return false;
  const ir::ValueRef x = *lowerer.tensor_arg(0, "self");
  const ir::TensorType input = lowerer.type(x);
  const auto dim = reduction_dims(node.arg_or_kwarg(1, "dim"), input.rank());
  if (!dim || dim->size() != 1) return make_error("bad softmax dim");
  const ir::ValueRef max = lowerer.reduce("max", Op::amax, x, *dim, true, input.dtype);
  // The shifted exponentials are computed twice: once inside the sum's prologue, once in the
  // final elementwise pass; storing them would cost a full write and read.
  const ir::ValueRef shifted_for_sum =
      lowerer.binary("shifted_for_sum", Op::sub_tensor, x, ref_arg(max));
  const ir::ValueRef exp_for_sum = lowerer.unary("exp_for_sum", Op::exp, shifted_for_sum);
  const ir::ValueRef sum =
      lowerer.reduce("sum", Op::sum_dim_intlist, exp_for_sum, *dim, true, input.dtype);
  const ir::ValueRef shifted = lowerer.binary("shifted", Op::sub_tensor, x, ref_arg(max));
  if (node.op == Op::softmax) {
    const ir::ValueRef exp = lowerer.unary("exp", Op::exp, shifted);
    lowerer.map_output(0, lowerer.binary("", Op::div_tensor, exp, ref_arg(sum)));
  } else {
    const ir::ValueRef log = lowerer.unary("log_sum", Op::log, sum);
    lowerer.map_output(0, lowerer.binary("", Op::sub_tensor, shifted, ref_arg(log)));
  }
  return true;
}

Result<bool> lower_layer_norm(Lowerer& lowerer) {
  const ir::Node& node = lowerer.origin();
  const auto rows = row_geometry(lowerer.source(), node);
  if (!rows) return make_error("normalized_shape does not fit the input");
  if (norm_row_kernel_suits(lowerer, rows->rows, rows->cols) && !lowerer.output_used(1) &&
      !lowerer.output_used(2))
    return false;
  const ir::ValueRef x = *lowerer.tensor_arg(0, "input");
  const ir::TensorType input = lowerer.type(x);
  const size_t normalized = node.arg_or_kwarg(1, "normalized_shape")->as_int_list()->size();
  std::vector<int64_t> dims;
  for (size_t d = input.shape.size() - normalized; d < input.shape.size(); ++d)
    dims.push_back(static_cast<int64_t>(d));
  auto [var, mean] = lowerer.var_mean("stats", x, dims, 0, true);
  const ir::ValueRef rstd = reciprocal_std(lowerer, var, double_arg(node, 4, "eps", 1e-5));
  ir::ValueRef y = normalize(lowerer, x, mean, rstd);
  if (auto weight = lowerer.tensor_arg(2, "weight"))
    y = lowerer.binary("scaled", Op::mul_tensor, y, ref_arg(*weight));
  if (auto bias = lowerer.tensor_arg(3, "bias"))
    y = lowerer.binary("shifted", Op::add_tensor, y, ref_arg(*bias));
  lowerer.map_output(0, lowerer.emit("", Op::alias, {ref_arg(y)}, {node.outputs[0]}));
  if (lowerer.output_used(1)) lowerer.map_output(1, mean);
  if (lowerer.output_used(2)) lowerer.map_output(2, rstd);
  return true;
}

namespace {

// What the three batch-norm overloads say beyond input, weight and bias.
struct BatchNormArgs {
  bool training = true;
  double eps = 1e-5;
  double momentum = 0.1;
  std::optional<ir::ValueRef> running_mean, running_var;
};

BatchNormArgs batch_norm_args(Lowerer& lowerer) {
  const ir::Node& node = lowerer.origin();
  BatchNormArgs args;
  switch (node.op) {
    case Op::batch_norm_no_stats:  // (input, weight, bias, training, momentum, eps)
      args.eps = double_arg(node, 5, "eps", args.eps);
      break;
    case Op::batch_norm_no_training:  // (input, weight, bias, mean, var, momentum, eps)
      args.training = false;
      args.eps = double_arg(node, 6, "eps", args.eps);
      break;
    default:  // (input, weight, bias, running_mean, running_var, training, momentum, eps)
      args.training = bool_arg(node, 5, "training", true);
      args.momentum = double_arg(node, 6, "momentum", args.momentum);
      args.eps = double_arg(node, 7, "eps", args.eps);
      break;
  }
  if (node.op != Op::batch_norm_no_stats) {
    args.running_mean = lowerer.tensor_arg(3, "running_mean");
    args.running_var = lowerer.tensor_arg(4, "running_var");
  }
  return args;
}

// Inference: y = x * scale + shift with scale = weight * rsqrt(var + eps) and
// shift = bias - mean * scale: both depend only on params (computed once, at init).
Result<bool> lower_inference_batch_norm(Lowerer& lowerer, const ir::ValueRef& x,
                                        std::optional<ir::ValueRef> weight,
                                        std::optional<ir::ValueRef> bias, const BatchNormArgs& args,
                                        bool stats_used) {
  if (!args.running_mean || !args.running_var)
    return make_error("inference-mode batch norm without running statistics");
  if (stats_used)
    return make_error("the saved statistics of an inference-mode batch norm are used");
  const ir::TensorType input = lowerer.type(x);
  std::vector<int64_t> channel_shape{input.shape[1]};
  for (int64_t d = 2; d < input.rank(); ++d)
    channel_shape.push_back(1);
  ir::ValueRef scale =
      reciprocal_std(lowerer, lowerer.view("var", *args.running_var, channel_shape), args.eps);
  if (weight)
    scale = lowerer.binary("scale", Op::mul_tensor, scale,
                           ref_arg(lowerer.view("weight", *weight, channel_shape)));
  ir::ValueRef shift =
      lowerer.binary("mean_scaled", Op::mul_tensor,
                     lowerer.view("mean", *args.running_mean, channel_shape), ref_arg(scale));
  shift = lowerer.unary("neg_shift", Op::neg, shift);
  if (bias)
    shift = lowerer.binary("shift", Op::add_tensor, shift,
                           ref_arg(lowerer.view("bias", *bias, channel_shape)));
  const ir::ValueRef scaled = lowerer.binary("scaled", Op::mul_tensor, x, ref_arg(scale));
  lowerer.map_output(0, lowerer.binary("", Op::add_tensor, scaled, ref_arg(shift)));
  return true;
}

// Statistics over trailing dims only (instance norm, batch norm with N = 1): rows are
// [leading dims], one row kernel does it all. `leading` is where the normalized dims begin.
struct TrailingRows {
  bool trailing = false;
  int64_t leading = 0, rows = 1, cols = 1;
};

TrailingRows trailing_rows(const ir::TensorType& input, const std::vector<int64_t>& dims) {
  const auto blocks = reduction_blocks(input.shape, dims);
  TrailingRows result;
  result.trailing = blocks.size() == 1;
  if (!result.trailing) return result;
  for (int64_t d = blocks[0].back() + 1; d < input.rank(); ++d)
    if (input.shape[d] != 1) result.trailing = false;
  result.leading = blocks[0].front();
  for (int64_t d = 0; d < result.leading; ++d)
    result.rows *= input.shape[d];
  result.cols = input.numel() / std::max<int64_t>(result.rows, 1);
  return result;
}

// The pieces of x where x is a cat along the channel dim (1) in the graph built so far.
std::optional<std::vector<ir::ValueRef>> channel_cat_pieces(Lowerer& lowerer,
                                                            const ir::ValueRef& x) {
  if (x.kind != ir::ValueRef::Kind::node || x.out != 0) return std::nullopt;
  const ir::Node& node = lowerer.rewriter().graph().nodes[x.index];
  if (node.op != Op::cat || node.args.empty() || !node.args[0].is_list()) return std::nullopt;
  if (wrap_dim(int_arg(node, 1, "dim", 0), lowerer.type(x).rank()) != 1) return std::nullopt;
  std::vector<ir::ValueRef> pieces;
  for (const ir::Arg& item : *node.args[0].list()) {
    // A piece of another rank (an empty 1-d tensor, which torch.cat skips): left whole.
    if (!item.is_ref() || lowerer.type(*item.ref()).rank() != lowerer.type(x).rank())
      return std::nullopt;
    pieces.push_back(*item.ref());
  }
  return pieces;
}

// The [C] variance (biased) and mean of x's channels (dim 1) over `dims` (N and the spatial
// dims), computed here: in one Welford pass (a mean_var reduction); with spatial dims the channels
// go first through a permuted view, which the reduction reads in place, so N and the spatial dims
// are one reduced block.
std::pair<ir::ValueRef, ir::ValueRef> computed_channel_stats(Lowerer& lowerer,
                                                             const ir::ValueRef& x,
                                                             const std::vector<int64_t>& dims) {
  const ir::TensorType input = lowerer.type(x);
  if (reduction_blocks(input.shape, dims).size() <= 1)
    return lowerer.var_mean("stats", x, dims, 0, false);
  const int64_t rank = input.rank();
  std::vector<int64_t> order{1, 0}, shape{input.shape[1], input.shape[0]}, rest{1};
  for (int64_t d = 2; d < rank; ++d) {
    order.push_back(d);
    shape.push_back(input.shape[d]);
    rest.push_back(d);
  }
  const ir::ValueRef channels_first =
      lowerer.emit("channels_first", Op::permute, {ref_arg(x), int_list_arg(order)},
                   {contiguous_type(shape, input.dtype)});
  return lowerer.var_mean("stats", channels_first, rest, 0, false);
}

// Piece by piece (channel_stats) pays where the pieces whose statistics are known already hold at
// least this many bytes: reading them again would take longer than the few small launches the
// pieces add (the statistics' epilogue — the reciprocal std, the running statistics — then runs
// as passes of their own, where a whole cat's reduction fuses it). DenseNet-121's 224 x 224 block
// (32-channel pieces of 64 MB) takes it, DenseNet-201's blocks (8 MB and less) do not.
constexpr int64_t kReusedStatisticsMinBytes = int64_t{32} << 20;

std::string channel_stats_key(const ir::ValueRef& x, const std::vector<int64_t>& dims) {
  std::string key = "channel_stats:" + value_key(x);
  for (int64_t d : dims)
    key += fmt::format(",{}", d);
  return key;
}

// computed_channel_stats, once per value in a lowering (Lowerer::reusable); a channel cat's piece
// by piece, their [C_piece] results joined by a cat (written in place by the reductions: cat
// placement), where the pieces with known statistics hold kReusedStatisticsMinBytes — each
// channel's statistics depend on its channel alone, and a DenseNet block normalises the cat of
// every earlier feature at each layer.
std::pair<ir::ValueRef, ir::ValueRef> channel_stats(Lowerer& lowerer, const ir::ValueRef& x,
                                                    const std::vector<int64_t>& dims) {
  const std::string key = channel_stats_key(x, dims);
  auto& reusable = lowerer.reusable();
  if (auto found = reusable.find(key); found != reusable.end())
    return {found->second.at(0), found->second.at(1)};
  const auto pieces = channel_cat_pieces(lowerer, x);
  if (pieces && pieces->size() == 1) return channel_stats(lowerer, pieces->front(), dims);
  int64_t known_bytes = 0;
  for (const ir::ValueRef& piece : pieces.value_or(std::vector<ir::ValueRef>{}))
    if (reusable.count(channel_stats_key(piece, dims)))
      known_bytes += lowerer.type(piece).numel() * ir::dtype_size(lowerer.type(piece).dtype);
  std::pair<ir::ValueRef, ir::ValueRef> stats;
  if (known_bytes >= kReusedStatisticsMinBytes) {
    ir::ArgList vars, means;
    for (const ir::ValueRef& piece : *pieces) {
      auto [var, mean] = channel_stats(lowerer, piece, dims);
      vars.push_back(ref_arg(var));
      means.push_back(ref_arg(mean));
    }
    const ir::TensorType out = contiguous_type({lowerer.type(x).shape[1]}, lowerer.type(x).dtype);
    stats = {lowerer.emit("stats_var_cat", Op::cat, {ir::Arg{std::move(vars)}, ir::Arg{int64_t{0}}},
                          {out}),
             lowerer.emit("stats_mean_cat", Op::cat,
                          {ir::Arg{std::move(means)}, ir::Arg{int64_t{0}}}, {out})};
  } else {
    stats = computed_channel_stats(lowerer, x, dims);
  }
  reusable[key] = {stats.first, stats.second};
  return stats;
}

// Batch statistics over N and the spatial dims (channel_stats), shaped [1, C, 1...].
std::pair<ir::ValueRef, ir::ValueRef> batch_stats(Lowerer& lowerer, const ir::ValueRef& x,
                                                  const std::vector<int64_t>& dims) {
  auto [var, mean] = channel_stats(lowerer, x, dims);
  std::vector<int64_t> kept(static_cast<size_t>(lowerer.type(x).rank()), 1);
  kept[1] = lowerer.type(x).shape[1];
  return {lowerer.view("stats_var", var, kept), lowerer.view("stats_mean", mean, kept)};
}

// The normalized batch and, when the var_mean path took them, its statistics ([1, C, 1...]; the
// variance biased).
struct BatchNormalized {
  ir::ValueRef y;
  std::optional<ir::ValueRef> mean, var;
};

// Training: batch statistics over N and the spatial dims, one row kernel where they are
// trailing dims, else one var_mean pass + elementwise (which also serves the saved statistics).
BatchNormalized normalize_batch(Lowerer& lowerer, const ir::ValueRef& x, double eps,
                                bool stats_used) {
  const ir::TensorType input = lowerer.type(x);
  const int64_t rank = input.rank(), channels = input.shape[1];
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < rank; ++d)
    dims.push_back(d);
  const TrailingRows rows = trailing_rows(input, dims);
  if (rows.trailing && !stats_used && row_kernel_suits(lowerer, rows.rows, rows.cols)) {
    const std::vector<int64_t> normalized(input.shape.begin() + rows.leading, input.shape.end());
    std::vector<int64_t> stats_shape(input.shape.begin(), input.shape.begin() + rows.leading);
    stats_shape.resize(input.shape.size(), 1);
    const ir::TensorType stats = contiguous_type(stats_shape, input.dtype);
    return {lowerer.emit("layer_norm", Op::native_layer_norm,
                         {ref_arg(x), int_list_arg(normalized), ir::Arg{}, ir::Arg{}, ir::Arg{eps}},
                         {contiguous_type(input.shape, input.dtype), stats, stats}),
            std::nullopt, std::nullopt};
  }
  auto [var, mean] = batch_stats(lowerer, x, dims);
  const ir::ValueRef rstd = reciprocal_std(lowerer, var, eps);
  const ir::ValueRef y = normalize(lowerer, x, mean, rstd);
  if (lowerer.output_used(1)) lowerer.map_output(1, lowerer.view("save_mean", mean, {channels}));
  if (lowerer.output_used(2)) lowerer.map_output(2, lowerer.view("save_rstd", rstd, {channels}));
  return {y, mean, var};
}

// The running statistics after this call, as PyTorch updates them: running * (1 - momentum) +
// batch * momentum, with the batch variance unbiased (times n / (n - 1), n the elements per
// channel). Outputs 3 and 4 of _native_batch_norm_legit_functional.
void update_running_stats(Lowerer& lowerer, const BatchNormArgs& args, const BatchNormalized& batch,
                          int64_t per_channel) {
  const int64_t channels = lowerer.type(*args.running_mean).numel();
  const double m = args.momentum;
  const double unbiased = per_channel > 1 ? static_cast<double>(per_channel) / (per_channel - 1)
                                          : std::numeric_limits<double>::infinity();
  auto blend = [&](const char* name, const ir::ValueRef& running, const ir::ValueRef& stat,
                   double stat_factor) {
    const ir::ValueRef kept =
        lowerer.scalar_binary(fmt::format("{}_kept", name), Op::mul_tensor, running, 1 - m);
    const ir::ValueRef added = lowerer.scalar_binary(
        fmt::format("{}_added", name), Op::mul_tensor,
        lowerer.view(fmt::format("{}_batch", name), stat, {channels}), m * stat_factor);
    return lowerer.binary(name, Op::add_tensor, kept, ref_arg(added));
  };
  if (lowerer.output_used(3))
    lowerer.map_output(3, blend("running_mean", *args.running_mean, *batch.mean, 1.0));
  if (lowerer.output_used(4))
    lowerer.map_output(4, blend("running_var", *args.running_var, *batch.var, unbiased));
}

}  // namespace

Result<bool> lower_batch_norm(Lowerer& lowerer) {
  const ir::Node& node = lowerer.origin();
  const ir::ValueRef x = *lowerer.tensor_arg(0, "input");
  const ir::TensorType input = lowerer.type(x);
  if (input.rank() < 2) return make_error("batch norm input must have a channel dim");
  const std::optional<ir::ValueRef> weight = lowerer.tensor_arg(1, "weight");
  const std::optional<ir::ValueRef> bias = lowerer.tensor_arg(2, "bias");
  const BatchNormArgs args = batch_norm_args(lowerer);
  const bool running_used =
      node.outputs.size() == 5 && (lowerer.output_used(3) || lowerer.output_used(4));
  const bool stats_used = lowerer.output_used(1) || lowerer.output_used(2);
  if (!args.training || lowerer.options().inference) {
    if (running_used)
      return make_error("the running statistics of an inference-mode batch norm are used");
    return lower_inference_batch_norm(lowerer, x, weight, bias, args, stats_used);
  }
  if (running_used && (!args.running_mean || !args.running_var))
    return make_error("batch norm updates running statistics it was not given");
  const BatchNormalized batch = normalize_batch(lowerer, x, args.eps, stats_used || running_used);
  if (running_used)
    update_running_stats(lowerer, args, batch,
                         input.numel() / std::max<int64_t>(input.shape[1], 1));
  ir::ValueRef y = channel_affine(lowerer, batch.y, weight, bias, input.rank());
  lowerer.map_output(0, lowerer.emit("", Op::alias, {ref_arg(y)}, {node.outputs[0]}));
  return true;
}

Result<bool> lower_group_norm(Lowerer& lowerer) {
  // native_group_norm(input, weight, bias, N, C, HxW, group, eps) -> (out, mean [N, G], rstd [N,
  // G])
  const ir::Node& node = lowerer.origin();
  const ir::ValueRef x = *lowerer.tensor_arg(0, "input");
  const ir::TensorType input = lowerer.type(x);
  const int64_t n = int_arg(node, 3, "N", 0), channels = int_arg(node, 4, "C", 0);
  const int64_t spatial = int_arg(node, 5, "HxW", 1), groups = int_arg(node, 6, "group", 1);
  const double eps = double_arg(node, 7, "eps", 1e-5);
  if (groups <= 0 || channels % groups != 0 || n * channels * spatial != input.numel())
    return make_error("group norm sizes do not fit the input");
  const int64_t cols = channels / groups * spatial;
  const ir::ValueRef grouped = lowerer.view("grouped", x, {n, groups, cols});
  const bool stats_used = lowerer.output_used(1) || lowerer.output_used(2);
  ir::ValueRef normalized;
  if (!stats_used && norm_row_kernel_suits(lowerer, n * groups, cols)) {
    const ir::TensorType stats = contiguous_type({n, groups, 1}, input.dtype);
    normalized =
        lowerer.emit("layer_norm", Op::native_layer_norm,
                     {ref_arg(grouped), int_list_arg({cols}), ir::Arg{}, ir::Arg{}, ir::Arg{eps}},
                     {contiguous_type({n, groups, cols}, input.dtype), stats, stats});
  } else {
    auto [var, mean] = lowerer.var_mean("stats", grouped, {2}, 0, true);
    const ir::ValueRef rstd = reciprocal_std(lowerer, var, eps);
    normalized = normalize(lowerer, grouped, mean, rstd);
    if (lowerer.output_used(1)) lowerer.map_output(1, lowerer.view("save_mean", mean, {n, groups}));
    if (lowerer.output_used(2)) lowerer.map_output(2, lowerer.view("save_rstd", rstd, {n, groups}));
  }
  ir::ValueRef y = lowerer.view("ungrouped", normalized, input.shape);
  y = channel_affine(lowerer, y, lowerer.tensor_arg(1, "weight"), lowerer.tensor_arg(2, "bias"),
                     input.rank());
  lowerer.map_output(0, lowerer.emit("", Op::alias, {ref_arg(y)}, {node.outputs[0]}));
  return true;
}

}  // namespace stitch::plan::lowering
