// The Planner's pipeline. Graph passes run in order, each verified (ir::verify) and dumpable; then
// the analyses: views (Access of every value), fusion (groups), subtasks (specs, kernels, costs,
// memory). Every step is a pure function of what the previous one produced.
#include "plan/planner.h"

#include <algorithm>

#include <fmt/format.h>

#include "ir/print.h"
#include "plan/access.h"
#include "plan/cat_placement.h"
#include "plan/conv_epilogue.h"
#include "plan/copy_folding.h"
#include "plan/cost_model.h"
#include "plan/fusion.h"
#include "plan/graph_edit.h"
#include "plan/kernel_choice.h"
#include "plan/layout.h"
#include "plan/memory_plan.h"
#include "plan/plan_check.h"
#include "plan/plan_print.h"
#include "plan/subtasks.h"
#include "util/gpu_peaks.h"

namespace stitch::plan {

namespace {

constexpr PassInfo kPasses[] = {
    {"dead-code", "remove nodes no graph output depends on"},
    {"shapes", "recompute output shapes/dtypes of covered ops and compare with the capture"},
    {"coverage", "refuse ops outside the covered families"},
    {"recurrences", "an unrolled Python-loop RNN cell becomes one recurrent layer"},
    {"fold-batchnorm", "fold an eval-mode BatchNorm into the convolution before it"},
    {"lower", "rewrite composite ops into primitives"},
    {"merge-gemms", "pointwise convolutions of one input become one GEMM over their weights"},
    {"materialize", "insert copies where strides cannot give a kernel what it needs"},
    {"cats", "nest a cat in the later cat that repeats its pieces (DenseNet's growing cat)"},
    {"views", "the Access of every value, views folded (analysis)"},
    {"fuse", "group nodes into subtasks by the fusion rules (analysis)"},
    {"subtasks", "specs, kernels, tunables, costs and memory (the plan)"},
};

class Pipeline {
 public:
  explicit Pipeline(const PlanOptions& options) : options_(options) {}

  void dump(std::string_view pass, const std::function<std::string()>& text) const {
    if (options_.dump && options_.dump_after == pass) options_.dump(pass, text());
  }

  // Runs a graph pass: verify its output, dump it when asked.
  Status graph_step(std::string_view pass, ir::Graph& graph,
                    const std::function<Result<ir::Graph>(const ir::Graph&)>& run) const {
    auto result = run(graph);
    if (!result.ok()) return result.error();
    if (Status verified = ir::verify(*result); !verified.ok())
      return verified.error().with_context(fmt::format("internal error after pass '{}'", pass));
    graph = std::move(*result);
    dump(pass, [&] { return ir::format_node_table(graph); });
    return {};
  }

 private:
  const PlanOptions& options_;
};

std::string format_values(const ir::Graph& graph, const ValueMap& values) {
  std::string text;
  auto line = [&](const ir::ValueRef& ref) {
    const auto it = values.find(value_key(ref));
    if (it != values.end())
      text += fmt::format("{:<32} {}\n", graph.name_of(ref), format_access(it->second, graph));
  };
  for (size_t i = 0; i < graph.inputs.size(); ++i)
    line({ir::ValueRef::Kind::input, static_cast<int32_t>(i), 0});
  for (size_t i = 0; i < graph.params.size(); ++i)
    line({ir::ValueRef::Kind::param, static_cast<int32_t>(i), 0});
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (size_t out = 0; out < graph.nodes[i].outputs.size(); ++out)
      line({ir::ValueRef::Kind::node, static_cast<int32_t>(i), static_cast<int32_t>(out)});
  return text;
}

std::string format_groups(const ir::Graph& graph, const Fusion& fusion) {
  static constexpr const char* kKinds[] = {"matmul",    "reduction", "row",    "elementwise",
                                           "copy",      "pool",      "conv",   "opaque",
                                           "attention", "scan",      "gather", "recurrent"};
  std::string text;
  auto ids = [&](const std::vector<int>& nodes) {
    std::vector<std::string> names;
    for (int node : nodes)
      names.push_back(graph.nodes[node].id);
    return fmt::format("{}", fmt::join(names, " "));
  };
  for (size_t g = 0; g < fusion.groups.size(); ++g) {
    const Group& group = fusion.groups[g];
    text += fmt::format("group {} {}", g, kKinds[static_cast<int>(group.kind)]);
    if (group.anchor >= 0) text += fmt::format(" anchor={}", graph.nodes[group.anchor].id);
    if (!group.prologue.empty()) text += fmt::format(" prologue=[{}]", ids(group.prologue));
    if (!group.library.empty())
      text += fmt::format(" library={}[{}]", group.library_epilogue, ids(group.library));
    if (!group.pattern.empty()) text += fmt::format(" pattern=[{}]", ids(group.pattern));
    if (!group.body.empty()) text += fmt::format(" body=[{}]", ids(group.body));
    text += "\n";
  }
  if (!fusion.folded_constants.empty())
    text += fmt::format("folded constants: {}\n",
                        ids({fusion.folded_constants.begin(), fusion.folded_constants.end()}));
  return text;
}

int64_t device_memory_bytes(const PlanOptions& options) {
  if (options.device_memory_bytes > 0) return options.device_memory_bytes;
  const GpuPeakRow* row = find_gpu_peaks(options.peaks.name);
  return static_cast<int64_t>((row ? *row : h200_peak_row()).memory_gb * 1e9);
}

}  // namespace

std::span<const PassInfo> plan_passes() {
  return kPasses;
}

namespace {

Status check_dump_after(const PlanOptions& options) {
  if (options.dump_after.empty() ||
      std::any_of(std::begin(kPasses), std::end(kPasses),
                  [&](const PassInfo& pass) { return pass.name == options.dump_after; }))
    return {};
  std::vector<std::string_view> names;
  for (const PassInfo& pass : kPasses)
    names.push_back(pass.name);
  return make_error(ErrorKind::bad_input, "unknown pass '{}' for --dump-after (passes: {})",
                    options.dump_after, fmt::join(names, ", "));
}

// The peaks kernel choice goes by: no TF32 tensor cores under --strict-fp32-gemm (strict FP32
// GEMMs and convolutions only).
GpuPeaks choice_peaks(const PlanOptions& options) {
  GpuPeaks peaks = options.peaks;
  if (!options.allow_tf32x3) peaks.tf32_tflops = 0;
  return peaks;
}

// Each subtask's kernel (its convolution epilogue folded in where the kernel takes it: the head,
// then the rest, or a reduction over its channels), then its cost; the plan's floor their sum.
void choose_kernels_and_costs(const ir::Graph& graph, const ValueMap& values,
                              const PlanOptions& options, Plan& plan) {
  const GpuPeaks peaks = choice_peaks(options);
  for (size_t i = 0; i < plan.subtasks.size(); ++i) {
    Subtask& subtask = plan.subtasks[i];
    choose_kernel(subtask, graph, peaks, options.tensor_math, options.conv_engine);
    fold_conv_epilogue(graph, values, plan.subtasks, i);
    fold_conv_output_transform(graph, values, plan.subtasks, i);
    fold_conv_channel_reduction(graph, values, plan.subtasks, i);
    const SubtaskCost cost = estimate_subtask_cost(graph, subtask, options.peaks);
    subtask.flops = cost.flops;
    subtask.bytes = cost.bytes;
    subtask.floor_us = cost.floor_us;
    subtask.bound = cost.bound;
    if (!subtask.at_init) plan.floor_us += cost.floor_us;
  }
}

// The analyses after the graph passes: the Access of every value (`layout_homes`: the values
// stored channels-last, layout.h), fusion, the subtasks (cats written in place, copies folded into
// stores, init-time ones marked), each one's kernel and cost. Dumps only the first build (no
// layout homes yet).
Status build_subtasks_and_kernels(const ir::Graph& graph, const PlanOptions& options,
                                  const Pipeline& pipeline, const ValueMap& layout_homes,
                                  ValueMap& values, Plan& plan) {
  const bool first = layout_homes.empty();
  STITCH_ASSIGN_OR_RETURN(values, fold_views(graph, first ? nullptr : &layout_homes));
  if (first) pipeline.dump("views", [&] { return format_values(graph, values); });
  const GpuPeaks peaks = choice_peaks(options);
  const ConvPrologueRule prologue_rule = [&](const ConvSpec& spec) {
    return conv_takes_prologue(spec, peaks, options.tensor_math, options.conv_engine);
  };
  const Fusion fusion = fuse(graph, values, options.keep_uncovered, prologue_rule);
  if (first) pipeline.dump("fuse", [&] { return format_groups(graph, fusion); });
  STITCH_ASSIGN_OR_RETURN(plan.subtasks, build_subtasks(graph, values, fusion));
  STITCH_TRY(place_cat_pieces(graph, values, plan.subtasks, layout_homes, prologue_rule));
  fold_copies_into_stores(graph, values, plan.subtasks);
  mark_init_subtasks(graph, values, plan.subtasks);
  plan.floor_us = 0;
  choose_kernels_and_costs(graph, values, options, plan);
  return {};
}

// The plan rebuilt with the values channels_last_homes picks stored channels-last; kept where the
// rebuild succeeds and every one still meets layout.h's rule, else the NCHW plan stays.
void choose_layouts(const ir::Graph& graph, const PlanOptions& options, const Pipeline& pipeline,
                      ValueMap& values, Plan& plan) {
  const ValueMap homes = channels_last_homes(graph, values, plan.subtasks, options.peaks);
  if (homes.empty()) return;
  ValueMap rebuilt_values;
  Plan rebuilt = plan;
  if (!build_subtasks_and_kernels(graph, options, pipeline, homes, rebuilt_values, rebuilt).ok() ||
      !channels_last_holds(graph, rebuilt_values, rebuilt.subtasks, homes))
    return;
  values = std::move(rebuilt_values);
  plan = std::move(rebuilt);
}

}  // namespace

Result<Plan> make_plan(const ir::Graph& captured, const PlanOptions& options) {
  STITCH_TRY(check_dump_after(options));
  STITCH_TRY(ir::verify(captured));
  const Pipeline pipeline(options);
  Plan plan;
  plan.task = captured.task.name;
  plan.peaks = options.peaks;
  ir::Graph graph = captured;
  if (options.inference) {  // eval semantics: forward updates no buffer (no state outputs)
    graph.outputs.resize(graph.user_output_count());
    graph.state_params.clear();
  }

  STITCH_TRY(pipeline.graph_step("dead-code", graph, [&](const ir::Graph& g) -> Result<ir::Graph> {
    return eliminate_dead_code(g, &plan.skipped);
  }));
  STITCH_TRY(pipeline.graph_step("shapes", graph,
                                 [&](const ir::Graph& g) { return check_shapes(g, options); }));
  STITCH_TRY(pipeline.graph_step("coverage", graph, [&](const ir::Graph& g) -> Result<ir::Graph> {
    if (!options.keep_uncovered) STITCH_TRY(check_coverage(g));
    return g;
  }));
  STITCH_TRY(pipeline.graph_step("recurrences", graph, fold_unrolled_recurrences));
  STITCH_TRY(
      pipeline.graph_step("fold-batchnorm", graph, [&](const ir::Graph& g) -> Result<ir::Graph> {
        return fold_batch_norm_into_conv(g, options);
      }));
  STITCH_TRY(pipeline.graph_step("lower", graph,
                                 [&](const ir::Graph& g) { return lower_composites(g, options); }));
  STITCH_TRY(pipeline.graph_step("merge-gemms", graph, [](const ir::Graph& g) -> Result<ir::Graph> {
    return merge_sibling_gemms(g);
  }));
  STITCH_TRY(pipeline.graph_step(
      "materialize", graph, [&](const ir::Graph& g) { return materialize_layouts(g, options); }));
  STITCH_TRY(pipeline.graph_step("cats", graph, nest_cats));

  ValueMap values;
  STITCH_TRY(build_subtasks_and_kernels(graph, options, pipeline, {}, values, plan));
  choose_layouts(graph, options, pipeline, values, plan);
  MemoryPlan memory = plan_memory(graph, values, plan.subtasks);
  plan.buffers = std::move(memory.buffers);
  plan.host = memory.host;
  plan.param_preps = plan_param_preps(graph, plan.subtasks);
  // Plan::values is keyed by value name, as plan.h promises (value_key is internal).
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const ir::ValueRef ref{ir::ValueRef::Kind::input, static_cast<int32_t>(i), 0};
    plan.values[graph.name_of(ref)] = values.at(value_key(ref));
  }
  for (size_t i = 0; i < graph.params.size(); ++i) {
    const ir::ValueRef ref{ir::ValueRef::Kind::param, static_cast<int32_t>(i), 0};
    plan.values[graph.name_of(ref)] = values.at(value_key(ref));
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (size_t out = 0; out < graph.nodes[i].outputs.size(); ++out) {
      const ir::ValueRef ref{ir::ValueRef::Kind::node, static_cast<int32_t>(i),
                             static_cast<int32_t>(out)};
      plan.values[graph.name_of(ref)] = values.at(value_key(ref));
    }
  plan.graph = std::move(graph);
  pipeline.dump("subtasks", [&] { return format_plan(plan) + format_plan_details(plan); });
  STITCH_TRY(check_device_memory(plan, device_memory_bytes(options), options.peaks.name));
  if (Status valid = check_plan(plan); !valid.ok())
    return valid.error().with_context("internal error: the plan breaks an invariant");
  return plan;
}

}  // namespace stitch::plan
