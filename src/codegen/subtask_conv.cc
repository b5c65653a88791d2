// Convolution subtasks: a CudnnConv (kernels/conv.cuh) member of Program::Convs, described and
// its engine chosen in Program::init_convs (heuristics, then a short timing on scratch buffers),
// run in run_subtasks on the arena's library workspace; or, where the plan chose the kernel
// `depthwise_conv`, one launch of kernels/conv_depthwise.cuh; or, for `igemm_tf32x3_conv`, a
// ConvIgemmTf32x3 (kernels/conv_igemm_tf32x3.cuh; ConvIgemmTf32, one TF32 product, under the
// tf32 / bf16 tracks' tensor_math) member of Program::Gemms, its weight split in
// init_gemms (no workspace); or, for `direct_conv`, a ConvDirect (kernels/conv_direct.cuh;
// ConvDirectTf32 under tensor_math) given the weight per call; a transposed one on either as its
// phases (ConvTransposeIgemmTf32x3, ConvTransposeDirect: kernels/conv_transpose.cuh), each phase's
// weight gathered at init. The project's kernels apply the plan's kernel epilogue (bias, ReLU /
// GELU) as they store — through an output map where the result is a window of a cat's buffer or
// stored channels-last (plan/layout.h; the implicit GEMM then also takes such an x as it is), and
// cuDNN a window of whole channels through y's image stride (ConvShape::y_image) or, timed against
// a kernel inside a channels-last region, x and y channels-last (ConvShape::x_channels_last /
// y_channels_last); the rest of the epilogue (activations, residual adds, scale/shift) runs as one
// elementwise pass after, whichever engine, or, where the plan made it the kernel's output
// transform, as a per-plane functor the kernel applies as it stores. A kernel convolution with
// `cudnn_alternative` also gets a CudnnConv: init_convs times the two
// (kernels/conv_engine_timing.cuh; where cuDNN has no engine for the shape, the kernel alone) and
// the forward runs the faster, cuDNN followed by the kernel epilogue's pass or the output
// transform's, in place.
#include <optional>

#include "codegen/emit_context.h"
#include "plan/access.h"
#include "plan/conv_geometry.h"
#include "plan/kernel_choice.h"

namespace stitch::codegen {
namespace {

using plan::ConvSpec;
using plan::Store;
using plan::Subtask;

Status check_conv(const ConvSpec& spec) {
  const size_t spatial = spec.input.size();
  if (spatial < 1 || spatial > 3) return make_error("a convolution needs 1 to 3 spatial dims");
  for (const auto* list : {&spec.output, &spec.kernel, &spec.stride, &spec.pad_before,
                           &spec.pad_after, &spec.dilation})
    if (list->size() != spatial) return make_error("convolution sizes differ in spatial rank");
  if (!spec.w.is_contiguous()) return make_error("a convolution reads a contiguous weight");
  if (spec.stores.empty()) return make_error("a convolution with nothing to store");
  return {};
}

// "shape.input[0] = 32; shape.input[1] = 32;"
std::string array_fields(const char* field, const std::vector<int64_t>& values) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i)
    text += fmt::format("{}shape.{}[{}] = {};", i ? " " : "", field, i, values[i]);
  return text;
}

// How cuDNN's x and y lie (ConvShape): y a window of whole channels (y_image, its image stride;
// 0: dense), x / y channels-last inside a plan's channels-last region (plan/layout.h).
struct CudnnLayout {
  int64_t y_image = 0;
  bool x_channels_last = false, y_channels_last = false;
};

// Init: the shape, the engine candidates under the track's math, then the timing. `then` (a timed
// pair's timing): a line after it in the same block (where `shape` is in scope), run only where
// cuDNN has an engine — otherwise the kernel runs, the alternative dropped.
void emit_conv_init(EmitContext& ctx, const Subtask& subtask, const ConvSpec& spec,
                    const std::string& member, const CudnnLayout& layout,
                    const std::string& then = "") {
  CodeWriter& iw = ctx.pieces().conv_init;
  iw.open("{{  // {}", subtask.id);
  iw.line("ConvShape shape;");
  iw.line("shape.spatial = {}; shape.batch = {}; shape.groups = {};", spec.input.size(), spec.batch,
          spec.groups);
  iw.line("shape.in_channels = {}; shape.out_channels = {};", spec.in_channels, spec.out_channels);
  iw.line("{}", array_fields("input", spec.input));
  iw.line("{}", array_fields("output", spec.output));
  iw.line("{}", array_fields("kernel", spec.kernel));
  iw.line("{}", array_fields("stride", spec.stride));
  iw.line("{}", array_fields("pad_before", spec.pad_before));
  iw.line("{}", array_fields("pad_after", spec.pad_after));
  iw.line("{}", array_fields("dilation", spec.dilation));
  iw.line("shape.transposed = {};", spec.transposed);
  iw.line("shape.alignment = 16;  // the planner clones views that are not");
  if (layout.y_image != 0)
    iw.line("shape.y_image = {};  // y: a window of whole channels", layout.y_image);
  if (layout.x_channels_last) iw.line("shape.x_channels_last = true;");
  if (layout.y_channels_last) iw.line("shape.y_channels_last = true;");
  // The tf32 / bf16 tracks' tensor cores (TF32 either way); strict FP32 on the fp32 track.
  const bool tf32 = plan::subtask_tensor_math(subtask) != plan::TensorMath::fp32;
  const std::string init = fmt::format(
      "s->convs.{}.init(s->convs.cudnn.get(), shape, ConvMath::{}, "
      "kLayout.lt_workspace_bytes, error)",
      member, tf32 ? "tf32" : "strict_fp32");
  const std::string tune = fmt::format(
      "STITCH_CHECK(tune_conv_on_scratch(s->convs.{}, shape, s->convs.workspace, "
      "stream, error, {}));",
      member, ctx.options().tune_iterations);
  if (then.empty()) {
    iw.line("STITCH_CHECK({});", init);
    iw.line("{}", tune);
  } else {
    iw.open("if ({} == STITCH_OK) {{", init);
    iw.line("{}", tune);
    iw.line("{}", then);
    iw.close_and_reopen(" else {");
    iw.line("error.clear();  // no cuDNN engine for it: the kernel runs");
    iw.close();
  }
  iw.close();
}

// A per-plane functor (kernels/plane_transform.cuh): `float operator()(int64_t plane, float x0)`
// evaluating `body` on x0, its load 0, where every other load is one value per plane, read at
// (n, c) of plane n * channels + c; it returns `result`, an operand of the body. A prologue (the
// kernel's input transform, over [batch, in_channels]), an output transform (over [batch,
// out_channels]) or a channel reduction's finish (over [batch, 1]). Returns the functor's
// initializer list.
Result<std::string> emit_plane_functor(EmitContext& ctx, const std::string& name,
                                       const plan::Body& body, int64_t batch, int64_t channels,
                                       const plan::Operand& result) {
  const std::vector<int64_t> planes{batch, channels};
  Members members;
  std::vector<plan::Access> plane_loads;
  for (size_t k = 1; k < body.loads.size(); ++k) {
    const plan::Access& load = body.loads[k];
    STITCH_ASSIGN_OR_RETURN(std::string init, ctx.typed_base(load.base));
    members.push_back(
        {fmt::format("const {}* l{};", c_type(ctx.type_of(load.base).dtype), k), init});
    plane_loads.push_back(
        plan::Access{load.base, load.offset, planes, {load.strides[0], load.strides[1]}});
  }
  CodeWriter& f = ctx.pieces().functors;
  open_functor(f, name, {&members}, "__device__ float operator()(int64_t plane, float x0) const");
  f.line("const int64_t n = plane / {}, c = plane % {};", channels, channels);
  f.line("(void)n;");
  f.line("(void)c;");
  std::vector<std::string> names{"x0"};
  for (size_t k = 0; k < plane_loads.size(); ++k) {
    names.push_back(fmt::format("x{}", k + 1));
    f.line("const float {} = static_cast<float>(l{}[{}]);", names.back(), k + 1,
           index_expr(plane_loads[k], planes, {"n", "c"}, "plane"));
  }
  STITCH_ASSIGN_OR_RETURN(std::vector<std::string> steps, ctx.emit_steps(f, body, names, {}, "v"));
  STITCH_ASSIGN_OR_RETURN(std::string returned, ctx.operand_expr(result, names, steps, {}));
  f.line("return {};", returned);
  close_functor(f);
  std::string init;
  append_inits(init, members);
  return init;
}

// A prologue as the kernel's input transform: x0 the raw input element, the result the last step.
Result<std::string> emit_conv_prologue(EmitContext& ctx, const std::string& name,
                                       const ConvSpec& spec) {
  const plan::Body& body = *spec.prologue;
  const plan::Operand last =
      body.steps.empty()
          ? plan::Operand{plan::Operand::Kind::load, 0, 0}
          : plan::Operand{plan::Operand::Kind::step, static_cast<int>(body.steps.size()) - 1, 0};
  return emit_plane_functor(ctx, name, body, spec.batch, spec.in_channels, last);
}

// The output transform: x0 the kernel's result, the stored value its one store's operand (with
// a channel reduction: the value reduced, its last step).
Result<std::string> emit_conv_output_transform(EmitContext& ctx, const std::string& name,
                                               const ConvSpec& spec) {
  const plan::Body& body = *spec.output_transform;
  const plan::Operand result =
      spec.channel_reduce
          ? plan::Operand{plan::Operand::Kind::step, static_cast<int>(body.steps.size()) - 1, 0}
          : spec.stores[0].from;
  return emit_plane_functor(ctx, name, body, spec.batch, spec.out_channels, result);
}

// A channel reduction (kernels/channel_reduction.cuh): its finish, the functor "<subtask>_reduce"
// over the reduce epilogue, and its type, the alias "<subtask>_reduction" (one name inside the
// macros init and run are called in). Returns the finish's initializer list.
Result<std::string> emit_channel_reduction(EmitContext& ctx, const Subtask& subtask,
                                           const ConvSpec& spec) {
  const std::string finish = EmitContext::functor_name(subtask, "reduce");
  STITCH_ASSIGN_OR_RETURN(std::string init,
                          emit_plane_functor(ctx, finish, *spec.reduce_epilogue, spec.batch, 1,
                                             spec.stores[0].from));
  ctx.pieces().functors.line(
      "using {} = detail::ChannelReduction<detail::ChannelReduceOp::{}, {}>;",
      EmitContext::functor_name(subtask, "reduction"),
      plan::kReduceOpNames[static_cast<int>(*spec.channel_reduce)], finish);
  return init;
}

// The direct depthwise kernel: a 1-d convolution is a 2-d one of height 1. `transform`: the
// prologue functor's variable, or empty.
void emit_depthwise_run(const ConvSpec& spec, const std::string& x, const std::string& weight,
                        const std::string& y, int64_t block, const std::string& transform,
                        CodeWriter& w) {
  const size_t last = spec.input.size() - 1;
  auto height = [&](const std::vector<int64_t>& sizes, int64_t one) {
    return last == 1 ? sizes[0] : one;
  };
  w.open("{{");
  w.line("DepthwiseConv2dShape shape;");
  w.line("shape.batch = {}; shape.channels = {}; shape.multiplier = {};", spec.batch,
         spec.in_channels, spec.out_channels / spec.in_channels);
  w.line("shape.in_h = {}; shape.in_w = {}; shape.out_h = {}; shape.out_w = {};",
         height(spec.input, 1), spec.input[last], height(spec.output, 1), spec.output[last]);
  w.line("shape.kernel_h = {}; shape.kernel_w = {};", height(spec.kernel, 1), spec.kernel[last]);
  w.line("shape.stride_h = {}; shape.stride_w = {};", height(spec.stride, 1), spec.stride[last]);
  w.line("shape.pad_top = {}; shape.pad_left = {};", height(spec.pad_before, 0),
         spec.pad_before[last]);
  w.line("shape.pad_bottom = {}; shape.pad_right = {};", height(spec.pad_after, 0),
         spec.pad_after[last]);
  w.line("shape.dilation_h = {}; shape.dilation_w = {};", height(spec.dilation, 1),
         spec.dilation[last]);
  w.line("STITCH_CHECK_CUDA(launch_depthwise_conv2d({}, {}, {}, shape, stream, {}{}));", x, weight,
         y, block, transform.empty() ? "" : ", " + transform);
  w.close();
}

// The shape of a convolution on one of the project's kernels (implicit GEMM or direct), declared
// as `shape` in the current block of `iw`.
void emit_kernel_conv_shape(const ConvSpec& spec, CodeWriter& iw) {
  // A transposed convolution (by phases: kernels/conv_transpose.cuh) takes PyTorch's padding,
  // symmetric.
  iw.line("{} shape;", spec.transposed ? "ConvTransposeShape" : "ConvIgemmShape");
  iw.line("shape.spatial = {}; shape.batch = {}; shape.groups = {};", spec.input.size(), spec.batch,
          spec.groups);
  iw.line("shape.in_channels = {}; shape.out_channels = {};", spec.in_channels, spec.out_channels);
  std::vector<std::pair<const char*, const std::vector<int64_t>*>> fields = {
      {"input", &spec.input},
      {"output", &spec.output},
      {"kernel", &spec.kernel},
      {"stride", &spec.stride}};
  if (spec.transposed) {
    fields.push_back({"pad", &spec.pad_before});
  } else {
    fields.push_back({"pad_before", &spec.pad_before});
    fields.push_back({"pad_after", &spec.pad_after});
  }
  fields.push_back({"dilation", &spec.dilation});
  for (const auto& [field, values] : fields)
    iw.line("{}", array_fields(field, *values));
}

// Where a kernel convolution's stores[0] goes when that is not a dense buffer of its own: its
// window of a larger one (a cat's, plan/cat_placement.h) or its own buffer channels-last
// (plan/layout.h), written through an output map.
std::optional<plan::Access> output_window(const EmitContext& ctx, const ConvSpec& spec) {
  const plan::Access stored = ctx.store_access(spec.stores[0].value);
  if (stored.base == spec.stores[0].value && stored.offset == 0 &&
      stored.strides == ir::contiguous_strides(stored.shape))
    return std::nullopt;
  return stored;
}

// What the convolution writes its result through: its own buffer, or its window's start.
Result<std::string> output_pointer(EmitContext& ctx, const ConvSpec& spec,
                                   const std::optional<plan::Access>& window) {
  if (!window) return ctx.typed_base(spec.stores[0].value, true);
  STITCH_ASSIGN_OR_RETURN(std::string base, ctx.typed_base(window->base, true));
  return fmt::format("{} + {}", base, window->offset);
}

// The output map of a window [batch, out_channels, output...] (its pointer carries the offset).
void emit_output_map(const plan::Access& window, const std::string& member, CodeWriter& iw) {
  iw.line("ConvIgemmOutputMap map;");
  iw.line("map.image_floats = {}; map.channel_floats = {};", window.strides[0], window.strides[1]);
  // The kernels' 3-d view: unit dims in front of a 1-d or 2-d output.
  const size_t spatial = window.strides.size() - 2;
  std::string steps;
  for (size_t i = 0; i < 3; ++i)
    steps += fmt::format("{}map.step[{}] = {};", i ? " " : "", i,
                         i < 3 - spatial ? 0 : window.strides[2 + i - (3 - spatial)]);
  iw.line("{}", steps);
  iw.line("s->{}.set_output_map(map);", member);
}

// One of the project's convolution kernels (implicit GEMM or direct; transposed: by phases) as
// a member of Program::Gemms: its shape given in init_gemms, and a parameter weight prepared once
// there where the class prepares one (split, or gathered per phase; a forward ConvDirect reads
// the weight as it is). Returns the weight argument of its run: "nullptr" when prepared at init.
// Its fused bias / activation: the plan's kernel epilogue; its output map, `window`'s.
std::string emit_kernel_conv_init(EmitContext& ctx, const Subtask& subtask, const ConvSpec& spec,
                                  const std::string& member, const std::string& weight,
                                  bool prepares_weights,
                                  const std::optional<plan::Access>& window) {
  CodeWriter& iw = ctx.pieces().gemm_init;
  iw.open("{{  // {}", subtask.id);
  emit_kernel_conv_shape(spec, iw);
  if (window) emit_output_map(*window, member, iw);
  if (spec.prologue) {  // the implicit GEMM (check_kernel) applies it as it copies x
    iw.line("s->{}.set_input_transform(true);", member);
    if (!spec.x.is_contiguous())  // a window of whole channels (a cat's piece)
      iw.line("s->{}.set_input_image_floats({});", member, spec.x.strides[0]);
  } else if (!spec.x.is_contiguous()) {  // channels-last (check_kernel): read as it is
    iw.line("s->{}.set_input_channels_last(true);", member);
  }
  // A kernel with an output transform (and a channel reduction) is initialised for its functors'
  // types.
  const std::string output_type = spec.output_transform
                                      ? EmitContext::functor_name(subtask, "output")
                                      : std::string("detail::PlaneIdentity");
  std::string init_for = spec.output_transform ? "<" + output_type + ">" : "";
  if (spec.channel_reduce) {
    iw.line("s->{}.set_channel_reduction();", member);
    init_for = fmt::format("<{}, {}>", output_type,
                           EmitContext::functor_name(subtask, "reduction"));
  }
  iw.line("STITCH_CHECK(s->{}.init{}(shape, MatmulEpilogue::{}, error));", member, init_for,
          spec.kernel_epilogue);
  const bool weight_at_init = prepares_weights && spec.w.base.kind == ir::ValueRef::Kind::param;
  if (weight_at_init)
    iw.line("STITCH_CHECK(s->{}.prepare_weights({}, stream, error));", member, weight);
  iw.close();
  return weight_at_init ? std::string("nullptr") : weight;
}

// The class of a kernel convolution's member: the implicit GEMM in 3xTF32, or in one TF32
// product where the plan gave it the tf32 / bf16 tracks' tensor_math.
std::string kernel_conv_class(const Subtask& subtask, const ConvSpec& spec, bool direct) {
  const bool fp32 = plan::subtask_tensor_math(subtask) == plan::TensorMath::fp32;
  const char* igemm = fp32 ? "IgemmTf32x3" : "IgemmTf32";
  const char* direct_class = fp32 ? "Direct" : "DirectTf32";
  return fmt::format("Conv{}{}", spec.transposed ? "Transpose" : "", direct ? direct_class : igemm);
}

// The kernel can run the convolution, and the plan's kernel epilogue is one it applies.
Status check_kernel(const Subtask& subtask, const ConvSpec& spec) {
  const bool depthwise = subtask.kernel == "depthwise_conv";
  const bool igemm = subtask.kernel == "igemm_tf32x3_conv";
  const bool direct = subtask.kernel == "direct_conv";
  if (depthwise && !plan::depthwise_conv_eligible(spec))
    return make_error("the depthwise kernel cannot run this convolution");
  if (spec.prologue && !depthwise && !(igemm && !spec.transposed))
    return make_error(
        "only the depthwise kernel and a forward implicit GEMM run a convolution prologue");
  if (spec.prologue && igemm) {
    if (!plan::is_dense_per_image(spec.x))
      return make_error("the implicit GEMM's prologue reads x dense per image");
  } else if (!spec.x.is_contiguous() &&
             !(igemm && !spec.transposed && plan::is_channels_last(spec.x))) {
    return make_error("only the implicit-GEMM kernel reads a channels-last x, and only forward");
  }
  if (igemm && !plan::conv_igemm_eligible(spec))
    return make_error("the implicit-GEMM 3xTF32 kernel cannot run this convolution");
  if (direct && !plan::direct_conv_eligible(spec, plan::subtask_tensor_math(subtask)))
    return make_error("the direct convolution kernel cannot run this convolution");
  if ((spec.kernel_epilogue != "none" || spec.output_transform) && !igemm && !direct)
    return make_error("kernel '{}' applies no convolution kernel epilogue or output transform",
                      subtask.kernel);
  if (spec.channel_reduce &&
      !((direct && plan::direct_conv_reduces_channels(spec, plan::subtask_tensor_math(subtask))) ||
        (igemm && plan::conv_igemm_reduces_channels(spec))))
    return make_error("kernel '{}' cannot reduce this convolution's channels", subtask.kernel);
  if (spec.channel_reduce && subtask.tunables.count("cudnn_alternative") > 0)
    return make_error("a convolution that reduces its channels is timed against no cuDNN");
  if (!plan::is_store_epilogue(spec.kernel_epilogue) ||
      spec.kernel_epilogue.starts_with("bias") != spec.bias.has_value())
    return make_error("convolution kernel epilogue '{}' {} a bias", spec.kernel_epilogue,
                      spec.bias ? "with" : "without");
  return {};
}

// How cuDNN, timed against a kernel convolution whose result goes to `window` (nullopt: a dense
// buffer of its own), reads x and writes y: as the kernel does inside a channels-last region
// (plan/layout.h), else NCHW, dense or a window of whole channels (the kernel epilogue's pass
// then over the window); an output transform's pass after it only over a dense NCHW output of
// its own with no kernel epilogue.
Result<CudnnLayout> cudnn_alternative_layout(const ConvSpec& spec,
                                             const std::optional<plan::Access>& window) {
  CudnnLayout layout;
  layout.y_channels_last = window && plan::is_own_channels_last(*window, spec.stores[0].value);
  layout.x_channels_last =
      !spec.prologue && plan::is_channels_last(spec.x) && !spec.x.is_contiguous();
  if (window && !layout.y_channels_last) {
    if (!plan::is_dense_per_image(*window))
      return make_error(
          "cuDNN, timed against the kernel, writes a dense output, NCHW or channels-last, or a "
          "window of whole channels");
    layout.y_image = window->strides[0];
  }
  if (spec.output_transform && (window || spec.kernel_epilogue != "none"))
    return make_error(
        "cuDNN, timed against a kernel with an output transform, writes a dense output with no "
        "kernel epilogue");
  return layout;
}

// A kernel convolution's run (its member initialised in init_gemms): into the buffer of its own
// that stores[0] has, or through an output map into its window of a cat's or channels-last.
Status emit_kernel_conv_run(EmitContext& ctx, const Subtask& subtask, const ConvSpec& spec,
                            const std::string& member, const std::string& x,
                            const std::string& weight, const std::vector<int64_t>& out_shape,
                            CodeWriter& w) {
  const std::optional<plan::Access> window = output_window(ctx, spec);
  if (window && (spec.transposed || window->shape != out_shape))
    return make_error("only a forward convolution's output goes to a window, its own shape");
  STITCH_ASSIGN_OR_RETURN(const std::string y, output_pointer(ctx, spec, window));
  const bool igemm = subtask.kernel == "igemm_tf32x3_conv";
  const std::string run_weight =
      emit_kernel_conv_init(ctx, subtask, spec, member, weight, igemm || spec.transposed, window);
  std::string bias = "nullptr";
  if (spec.bias) {
    STITCH_ASSIGN_OR_RETURN(bias, ctx.access_pointer(*spec.bias));
  }
  if (spec.prologue) {  // the input transform, given to the run (and to cuDNN's copy of x)
    const std::string functor = EmitContext::functor_name(subtask, "prologue");
    STITCH_ASSIGN_OR_RETURN(std::string init, emit_conv_prologue(ctx, functor, spec));
    w.line("const {} pro{{{}}};", functor, init);
  }
  if (spec.output_transform) {  // applied by the kernel as it stores (and to cuDNN's output)
    const std::string functor = EmitContext::functor_name(subtask, "output");
    STITCH_ASSIGN_OR_RETURN(std::string init, emit_conv_output_transform(ctx, functor, spec));
    w.line("const {} out{{{}}};", functor, init);
  }
  if (spec.channel_reduce) {  // the kernel reduces its channels as it stores, then finishes
    STITCH_ASSIGN_OR_RETURN(std::string init, emit_channel_reduction(ctx, subtask, spec));
    w.line("const {} red{{{{{}}}}};", EmitContext::functor_name(subtask, "reduction"), init);
  }
  // The kernels' run(..., input transform, output transform, channel reduction).
  std::string transform = spec.prologue ? ", pro" : "";
  if (spec.output_transform || spec.channel_reduce)
    transform = fmt::format("{}, {}", spec.prologue ? ", pro" : ", detail::PlaneIdentity{}",
                            spec.output_transform ? "out" : "detail::PlaneIdentity{}");
  if (spec.channel_reduce) transform += ", red";
  const std::string run = fmt::format("STITCH_CHECK(s->{}.run({}, {}, {}, {}, stream, error{}));",
                                      member, x, run_weight, bias, y, transform);
  if (subtask.tunables.count("cudnn_alternative") == 0) {
    w.line("{}", run);
    return {};
  }
  // cuDNN timed against the kernel at init; the faster one runs (kernels/conv_engine_timing.cuh).
  STITCH_ASSIGN_OR_RETURN(const CudnnLayout layout, cudnn_alternative_layout(spec, window));
  ProgramPieces& pieces = ctx.pieces();
  pieces.uses_conv = pieces.uses_conv_timing = true;
  const std::string cudnn = fmt::format("conv{}", pieces.conv_members.size());
  pieces.conv_members.push_back(
      fmt::format("CudnnConv {};  // {}, timed against the kernel", cudnn, subtask.id));
  pieces.conv_members.push_back(fmt::format("bool {}_faster = false;  // ... and chosen", cudnn));
  emit_conv_init(
      ctx, subtask, spec, cudnn, layout,
      fmt::format("STITCH_CHECK(time_kernel_against_cudnn(s->{}, {}, s->convs.{}, shape, "
                  "MatmulEpilogue::{}, CudnnSidePasses{{{}, {}}}, s->convs.workspace, stream, "
                  "error, s->convs.{}_faster));",
                  member, run_weight == "nullptr", cudnn, spec.kernel_epilogue,
                  spec.prologue.has_value(), spec.output_transform.has_value(), cudnn));
  w.open("if (s->convs.{}_faster) {{", cudnn);
  std::string cudnn_x = x;
  if (spec.prologue) {  // cuDNN reads the kernel's transformed copy of x
    cudnn_x = "transformed";
    w.line("const float* transformed = nullptr;");
    w.line("STITCH_CHECK(s->{}.transformed_input({}, stream, pro, transformed, error));", member,
           x);
  }
  w.line("STITCH_CHECK(s->convs.{}.run({}, {}, {}, s->convs.workspace, stream, error));", cudnn,
         cudnn_x, weight, y);
  const int64_t plane = numel(out_shape) / (spec.batch * spec.out_channels);
  if (spec.kernel_epilogue != "none")
    w.line(
        "STITCH_CHECK_CUDA(launch_conv_bias_activation({}, {}, MatmulEpilogue::{}, {}, {}, {}, "
        "{}, {}, stream));",
        y, bias, spec.kernel_epilogue, spec.batch, spec.out_channels, plane, layout.y_image,
        layout.y_channels_last);
  if (spec.output_transform)  // in place over its dense output (plan_check)
    w.line(
        "STITCH_CHECK_CUDA(detail::launch_transform_planes({}, {}, {}, {}, {}, {}, stream, out));",
        y, spec.out_channels * plane, y, spec.batch, spec.out_channels, plane);
  w.close_and_reopen(" else {");
  w.line("{}", run);
  w.close();
  return {};
}

// What remains of the epilogue after the convolution: one elementwise pass, reading stores[0]
// back and writing the other stores.
Status emit_conv_epilogue(EmitContext& ctx, const Subtask& subtask, const ConvSpec& spec,
                          const std::vector<int64_t>& out_shape, CodeWriter& w) {
  if (!spec.epilogue) return {};
  std::vector<Store> rest(spec.stores.begin() + 1, spec.stores.end());
  if (rest.empty()) return make_error("a convolution epilogue that stores nothing");
  return emit_library_elementwise(ctx, subtask, "epilogue", out_shape, *spec.epilogue, rest, w);
}

}  // namespace

Status emit_spec(EmitContext& ctx, const Subtask& subtask, const ConvSpec& spec, CodeWriter& w) {
  STITCH_TRY(check_conv(spec));
  ProgramPieces& pieces = ctx.pieces();
  STITCH_TRY(check_kernel(subtask, spec));
  const bool depthwise = subtask.kernel == "depthwise_conv";
  const bool igemm = subtask.kernel == "igemm_tf32x3_conv";
  const bool direct = subtask.kernel == "direct_conv";
  // cuDNN and the depthwise kernel: into the result's own buffer, or (cuDNN) a window of whole
  // channels of a cat's through y's image stride; the kernels take any window (their output map).
  const std::optional<plan::Access> window = output_window(ctx, spec);
  if (window && !igemm && !direct && (depthwise || !plan::is_dense_per_image(*window)))
    return make_error("kernel '{}' writes a dense output or (cuDNN) a window of whole channels",
                      subtask.kernel);
  std::string member;
  if (depthwise) {
    pieces.uses_depthwise = true;
  } else if (igemm || direct) {
    (direct ? pieces.uses_conv_direct : pieces.uses_conv_igemm) = true;
    pieces.uses_conv_transpose |= spec.transposed;
    pieces.uses_matmul = true;  // its member lives in Program::Gemms, initialised in init_gemms
    member = fmt::format("gemms.conv{}", pieces.matmul_count++);
    pieces.gemm_members.push_back(fmt::format("{} {};  // {}",
                                              kernel_conv_class(subtask, spec, direct),
                                              member.substr(member.find('.') + 1), subtask.id));
  } else {
    pieces.uses_conv = true;
    member = fmt::format("conv{}", pieces.conv_members.size());
    pieces.conv_members.push_back(fmt::format("CudnnConv {};  // {}", member, subtask.id));
    emit_conv_init(ctx, subtask, spec, member, CudnnLayout{window ? window->strides[0] : 0});
  }

  const std::vector<int64_t> out_shape = plan::conv_output_space(spec);
  const Store& conv_out = spec.stores[0];
  const int64_t stored = numel(out_shape) / (spec.channel_reduce ? spec.out_channels : 1);
  if (numel(ctx.type_of(conv_out.value).shape) != stored)
    return make_error("the convolution's output buffer does not hold {} elements", stored);
  STITCH_ASSIGN_OR_RETURN(std::string x, ctx.access_pointer(spec.x));
  STITCH_ASSIGN_OR_RETURN(std::string weight, ctx.access_pointer(spec.w));
  if (igemm || direct) {
    STITCH_TRY(emit_kernel_conv_run(ctx, subtask, spec, member, x, weight, out_shape, w));
    return emit_conv_epilogue(ctx, subtask, spec, out_shape, w);
  }
  STITCH_ASSIGN_OR_RETURN(const std::string y, output_pointer(ctx, spec, window));
  if (depthwise) {
    const auto block = subtask.tunables.find("block");
    std::string transform;
    if (spec.prologue) {
      const std::string functor = EmitContext::functor_name(subtask, "prologue");
      STITCH_ASSIGN_OR_RETURN(std::string init, emit_conv_prologue(ctx, functor, spec));
      w.line("const {} pro{{{}}};", functor, init);
      transform = "pro";
    }
    emit_depthwise_run(spec, x, weight, y, block == subtask.tunables.end() ? 256 : block->second,
                       transform, w);
  } else {
    w.line("STITCH_CHECK(s->convs.{}.run({}, {}, {}, s->convs.workspace, stream, error));", member,
           x, weight, y);
  }
  return emit_conv_epilogue(ctx, subtask, spec, out_shape, w);
}

}  // namespace stitch::codegen
