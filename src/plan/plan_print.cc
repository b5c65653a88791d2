// Plan printing (plan_print.h).
#include "plan/plan_print.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/print.h"
#include "plan/access.h"
#include "plan/cost_model.h"
#include "plan/kernel_choice.h"
#include "plan/subtasks.h"
#include "util/enum_names.h"

namespace stitch::plan {

namespace {

std::string node_list(const Plan& plan, const std::vector<int>& nodes, size_t limit) {
  std::vector<std::string> ids;
  for (size_t i = 0; i < nodes.size() && i < limit; ++i)
    ids.push_back(plan.graph.nodes[nodes[i]].id);
  std::string text = fmt::format("{}", fmt::join(ids, ","));
  if (nodes.size() > limit) text += fmt::format(",+{}", nodes.size() - limit);
  return text;
}

std::string tunables_text(const Subtask& subtask) {
  std::vector<std::string> items;
  for (const auto& [key, value] : subtask.tunables)
    if (key != "workspace_bytes") items.push_back(format_tunable(key, value));
  return fmt::format("{}", fmt::join(items, " "));
}

std::string shape_text(const Subtask& subtask) {
  return std::visit(
      [](const auto& spec) -> std::string {
        using T = std::decay_t<decltype(spec)>;
        if constexpr (std::is_same_v<T, MatmulSpec>)
          return fmt::format("{}x{}x{}x{}", spec.batch, spec.m, spec.n, spec.k);
        else if constexpr (std::is_same_v<T, ReductionSpec>)
          return fmt::format("{}x{}x{}", spec.outer, spec.reduce, spec.inner);
        else if constexpr (std::is_same_v<T, RowSpec>)
          return fmt::format("{}x{}", spec.rows, spec.cols);
        else if constexpr (std::is_same_v<T, ElementwiseSpec>)
          return fmt::format("[{}]", fmt::join(spec.shape, ","));
        else if constexpr (std::is_same_v<T, PoolSpec>)
          return fmt::format("[{}]", fmt::join(spec.input.shape, ","));
        else if constexpr (std::is_same_v<T, ConvSpec>)
          return fmt::format("{}x{}x{}", spec.batch, spec.out_channels,
                             fmt::join(spec.output, "x"));
        else if constexpr (std::is_same_v<T, AttentionSpec>)
          return fmt::format("{}x{}x{}x{}x{}", spec.batch, spec.heads, spec.queries, spec.keys,
                             spec.head_dim);
        else if constexpr (std::is_same_v<T, ScanSpec>)
          return fmt::format("{}x{}x{}", spec.outer, spec.length, spec.inner);
        else if constexpr (std::is_same_v<T, GatherSpec>)
          return fmt::format("{}x{}x{}", spec.outer, spec.count, spec.inner);
        else if constexpr (std::is_same_v<T, RecurrentSpec>)
          return fmt::format("{}x{}x{}x{}", spec.seq_len, spec.batch, spec.input_size,
                             spec.hidden_size);
        else if constexpr (std::is_same_v<T, OpaqueSpec>)
          return fmt::format(
              "[{}]",
              fmt::join(spec.inputs.empty() ? std::vector<int64_t>{} : spec.inputs[0].shape, ","));
        else
          return fmt::format("[{}]", fmt::join(spec.source.shape, ","));
      },
      subtask.spec);
}

std::string operand_text(const Operand& operand) {
  switch (operand.kind) {
    case Operand::Kind::load:
      return fmt::format("l{}", operand.index);
    case Operand::Kind::step:
      return fmt::format("t{}", operand.index);
    case Operand::Kind::scalar:
      return fmt::format("{}", operand.scalar);
    case Operand::Kind::index:
      return fmt::format("index{}", operand.index);
  }
  return "?";
}

void append_body(std::string& text, const Plan& plan, const char* name, const Body& body) {
  text += fmt::format("    {}:\n", name);
  for (size_t k = 0; k < body.loads.size(); ++k)
    text += fmt::format("      l{} = {}\n", k, format_access(body.loads[k], plan.graph));
  for (size_t k = 0; k < body.steps.size(); ++k) {
    const BodyStep& step = body.steps[k];
    std::vector<std::string> operands;
    for (const Operand& operand : step.operands)
      operands.push_back(operand_text(operand));
    const ir::Node& node = plan.graph.nodes[step.node];
    text += fmt::format("      t{} = {}({}) {}  # {}\n", k, ir::short_op_name(node.op_name),
                        fmt::join(operands, ", "), ir::dtype_name(step.dtype), node.id);
  }
}

void append_stores(std::string& text, const Plan& plan, const std::vector<Store>& stores) {
  for (const Store& store : stores)
    text += fmt::format("    store {} <- {}\n", plan.graph.name_of(store.value),
                        operand_text(store.from));
}

// The line saying a subtask's first store goes to its own buffer channels-last (layout.h).
void append_channels_last_store(std::string& text, const Plan& plan,
                                const std::vector<Store>& stores) {
  if (stores.empty()) return;
  const std::string name = plan.graph.name_of(stores[0].value);
  const auto stored = plan.values.find(name);
  if (stored != plan.values.end() && is_own_channels_last(stored->second, stores[0].value))
    text += fmt::format("    {} stored channels-last\n", name);
}

void append_pool(std::string& text, const Plan& plan, const PoolSpec& spec) {
  text += fmt::format("    {} to [{}], input = {}\n", kPoolOpNames[static_cast<int>(spec.op)],
                      fmt::join(spec.out, ", "), format_access(spec.input, plan.graph));
  if (!spec.kernel.empty())
    text += fmt::format("    kernel [{}] stride [{}] padding [{}] dilation [{}]{}{}\n",
                        fmt::join(spec.kernel, ", "), fmt::join(spec.stride, ", "),
                        fmt::join(spec.padding, ", "), fmt::join(spec.dilation, ", "),
                        spec.op == PoolOp::avg && !spec.count_include_pad ? " exclude_pad" : "",
                        spec.divisor != 0 ? fmt::format(" divisor {}", spec.divisor) : "");
  if (!spec.scale.empty())
    text += fmt::format("    scale [{}]{}\n", fmt::join(spec.scale, ", "),
                        spec.align_corners ? " align_corners" : "");
  if (spec.epilogue) append_body(text, plan, "epilogue", *spec.epilogue);
  append_stores(text, plan, spec.stores);
  append_channels_last_store(text, plan, spec.stores);
}

void append_scan_or_gather(std::string& text, const Plan& plan, const ScanSpec& spec) {
  text +=
      fmt::format("    {}{}{} over {}x{}x{}, input = {}\n", kScanOpNames[static_cast<int>(spec.op)],
                  spec.reverse ? " reverse" : "", spec.exclusive ? " exclusive" : "", spec.outer,
                  spec.length, spec.inner, format_access(spec.input, plan.graph));
  if (spec.prologue) append_body(text, plan, "prologue", *spec.prologue);
  if (spec.epilogue) append_body(text, plan, "epilogue", *spec.epilogue);
  append_stores(text, plan, spec.stores);
  append_channels_last_store(text, plan, spec.stores);
}

void append_scan_or_gather(std::string& text, const Plan& plan, const GatherSpec& spec) {
  text +=
      fmt::format("    {}x[{}]x{} of {}, input = {}, index = {}{}\n", spec.outer, spec.count,
                  spec.inner, spec.size, format_access(spec.input, plan.graph),
                  format_access(spec.index, plan.graph), spec.per_element ? " (per element)" : "");
  append_stores(text, plan, spec.stores);
}

void append_recurrent(std::string& text, const Plan& plan, const RecurrentSpec& spec) {
  text += fmt::format(
      "    {} {} layer(s){}, seq_len {}, batch {}, input {}, hidden {}{}{}, x = {}, h0 = {}\n",
      kRecurrentCellNames[static_cast<int>(spec.cell)], spec.layers,
      spec.bidirectional ? " bidirectional" : "", spec.seq_len, spec.batch, spec.input_size,
      spec.hidden_size, spec.batch_first ? ", batch_first" : "",
      spec.has_biases ? "" : ", no biases", format_access(spec.x, plan.graph),
      format_access(spec.h0, plan.graph));
  if (spec.c0) text += fmt::format("    c0 = {}\n", format_access(*spec.c0, plan.graph));
  text += fmt::format("    params: {} tensors\n", spec.params.size());
  append_stores(text, plan, spec.stores);
}

void append_conv(std::string& text, const Plan& plan, const ConvSpec& spec) {
  text += fmt::format(
      "    {}conv {}x{}x[{}] -> {}x{}x[{}], kernel [{}] stride [{}] pad [{}]/[{}] dilation [{}] "
      "groups {}\n",
      spec.transposed ? "transposed " : "", spec.batch, spec.in_channels,
      fmt::join(spec.input, ","), spec.batch, spec.out_channels, fmt::join(spec.output, ","),
      fmt::join(spec.kernel, ","), fmt::join(spec.stride, ","), fmt::join(spec.pad_before, ","),
      fmt::join(spec.pad_after, ","), fmt::join(spec.dilation, ","), spec.groups);
  const bool x_last = !spec.x.is_contiguous() && is_channels_last(spec.x);
  text += fmt::format("    x = {}{}\n    w = {}\n", format_access(spec.x, plan.graph),
                      x_last ? " (channels-last)" : "", format_access(spec.w, plan.graph));
  if (spec.prologue) append_body(text, plan, "prologue", *spec.prologue);
  if (spec.kernel_epilogue != "none")
    text += fmt::format("    kernel epilogue {}{}\n", spec.kernel_epilogue,
                        spec.bias ? ", bias = " + format_access(*spec.bias, plan.graph) : "");
  if (spec.epilogue) append_body(text, plan, "epilogue", *spec.epilogue);
  if (spec.output_transform) append_body(text, plan, "output transform", *spec.output_transform);
  if (spec.channel_reduce)
    text += fmt::format("    {} over the output channels\n",
                        kReduceOpNames[static_cast<int>(*spec.channel_reduce)]);
  if (spec.reduce_epilogue) append_body(text, plan, "reduce epilogue", *spec.reduce_epilogue);
  append_stores(text, plan, spec.stores);
  append_channels_last_store(text, plan, spec.stores);
}

void append_attention(std::string& text, const Plan& plan, const AttentionSpec& spec) {
  text += fmt::format(
      "    attention {}x{} heads, {} queries x {} keys, head_dim {} value_dim {}, scale {}, "
      "norm {}{}\n",
      spec.batch, spec.heads, spec.queries, spec.keys, spec.head_dim, spec.value_dim, spec.scale,
      kAttentionNormNames[static_cast<int>(spec.norm)], spec.causal ? ", causal" : "");
  text += fmt::format("    q = {}\n    k = {}\n    v = {}\n", format_access(spec.q, plan.graph),
                      format_access(spec.k, plan.graph), format_access(spec.v, plan.graph));
  if (spec.mask)
    text +=
        fmt::format("    mask ({}) = {}\n", kAttentionMaskNames[static_cast<int>(spec.mask_kind)],
                    format_access(*spec.mask, plan.graph));
  if (spec.scores) append_body(text, plan, "scores", *spec.scores);
  append_stores(text, plan, spec.stores);
  if (spec.output)
    text += fmt::format("    output = {}\n", format_access(*spec.output, plan.graph));
}

std::string_view row_op_name(RowOp op) {
  static constexpr std::string_view kNames[] = {"softmax", "log_softmax", "layer_norm", "rms_norm"};
  return kNames[static_cast<int>(op)];
}

std::string_view where_name(BufferSlot::Where where) {
  static constexpr std::array<std::string_view, 3> kNames = {"arena", "output", "persistent"};
  static_assert(kNames.size() == static_cast<size_t>(BufferSlot::Where::persistent) + 1);
  return enum_name(kNames, where, "?");
}

}  // namespace

std::string_view bound_name(Bound bound) {
  static constexpr std::array<std::string_view, 3> kNames = {"memory", "compute", "latency"};
  static_assert(kNames.size() == static_cast<size_t>(Bound::latency) + 1);
  return enum_name(kNames, bound, "?");
}

// The engines the program times at init (kernel_choice.h: cudnn_alternative, strict_alternative)
// and the values stored channels-last (layout.h); empty where there are none.
std::string choices_text(const Plan& plan) {
  std::string text;
  auto count = [&](const char* tunable) {
    return std::count_if(plan.subtasks.begin(), plan.subtasks.end(),
                         [&](const Subtask& subtask) { return subtask.tunables.count(tunable); });
  };
  std::vector<std::string> timed;
  if (const auto convs = count("cudnn_alternative"); convs > 0)
    timed.push_back(fmt::format("{} convolution(s) against cuDNN", convs));
  if (const auto gemms = count("strict_alternative"); gemms > 0)
    timed.push_back(fmt::format("{} split GEMM(s) against strict FP32", gemms));
  if (!timed.empty())
    text += fmt::format("timed at init: {}, the faster one runs\n", fmt::join(timed, "; "));
  std::vector<std::string> channels_last;
  for (const auto& [name, access] : plan.values)
    if (access.base.kind == ir::ValueRef::Kind::node && plan.graph.name_of(access.base) == name &&
        !access.is_contiguous() && is_channels_last(access))
      channels_last.push_back(name);
  if (!channels_last.empty())
    text += fmt::format("channels-last: {}\n", fmt::join(channels_last, ", "));
  return text;
}

std::string format_plan(const Plan& plan) {
  // The compute peak of a split_tf32x3 GEMM's floor (cost_model.h).
  const std::string tf32x3 = plan.peaks.tf32_tflops > 0
                                 ? fmt::format(", {:.0f} TFLOP/s 3xTF32", tf32x3_tflops(plan.peaks))
                                 : "";
  std::string text = fmt::format(
      "plan for {}: {} subtasks, roofline floor {:.2f} us on {} ({} TFLOP/s fp32{}, {} GB/s, {} "
      "SMs)\n",
      plan.task, plan.subtasks.size(), plan.floor_us, plan.peaks.name, plan.peaks.fp32_tflops,
      tf32x3, plan.peaks.dram_gbps, plan.peaks.sms);
  text += fmt::format("{:<3} {:<40} {:<11} {:<28} {:<18} {:<15} {:<44} {:>10} {:<8} {:>6}\n", "#",
                      "subtask", "kind", "nodes", "shape", "kernel", "tunables", "floor us",
                      "bound", "share");
  for (size_t i = 0; i < plan.subtasks.size(); ++i) {
    const Subtask& subtask = plan.subtasks[i];
    const std::string share = subtask.at_init ? "init"
                              : plan.floor_us > 0
                                  ? fmt::format("{:.1f}%", 100.0 * subtask.floor_us / plan.floor_us)
                                  : "-";
    text += fmt::format("{:<3} {:<40} {:<11} {:<28} {:<18} {:<15} {:<44} {:>10.2f} {:<8} {:>6}\n",
                        i, subtask.id, spec_kind_name(subtask.spec),
                        node_list(plan, subtask.nodes, 3), shape_text(subtask), subtask.kernel,
                        tunables_text(subtask), subtask.floor_us, bound_name(subtask.bound), share);
  }
  std::vector<const Subtask*> ranked;
  for (const Subtask& subtask : plan.subtasks)
    if (!subtask.at_init) ranked.push_back(&subtask);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Subtask* a, const Subtask* b) { return a->floor_us > b->floor_us; });
  std::vector<std::string> hotspots;
  for (size_t i = 0; i < ranked.size() && i < 3; ++i)
    hotspots.push_back(
        fmt::format("{} ({:.1f}%)", ranked[i]->id,
                    plan.floor_us > 0 ? 100.0 * ranked[i]->floor_us / plan.floor_us : 0.0));
  if (!hotspots.empty()) text += fmt::format("hotspots: {}\n", fmt::join(hotspots, ", "));
  text += fmt::format("workspace: {} (library {}), persistent: {}, cuda graph: {}\n",
                      ir::format_bytes(static_cast<double>(plan.host.workspace_bytes)),
                      ir::format_bytes(static_cast<double>(plan.host.library_workspace_bytes)),
                      ir::format_bytes(static_cast<double>(plan.host.persistent_bytes)),
                      plan.host.cuda_graph ? "yes" : "no");
  text += choices_text(plan);
  for (const Skipped& skipped : plan.skipped)
    text += fmt::format("skipped {}: {}\n", skipped.node_id, skipped.reason);
  for (const ParamPrep& prep : plan.param_preps)
    text += fmt::format("param {}: {} ({})\n", plan.graph.params[prep.param].name, prep.action,
                        prep.detail);
  return text;
}

std::string format_plan_details(const Plan& plan) {
  std::string text;
  for (const Subtask& subtask : plan.subtasks) {
    text += fmt::format("{}{} [{}]\n", subtask.id, subtask.at_init ? " (at init)" : "",
                        node_list(plan, subtask.nodes, subtask.nodes.size()));
    std::visit(
        [&](const auto& spec) {
          using T = std::decay_t<decltype(spec)>;
          if constexpr (std::is_same_v<T, MatmulSpec>) {
            text += fmt::format("    a = {}\n    b = {}\n", format_access(spec.a, plan.graph),
                                format_access(spec.b, plan.graph));
            if (spec.bias)
              text += fmt::format("    bias = {}\n", format_access(*spec.bias, plan.graph));
            text += fmt::format("    alpha {} beta {} library_epilogue {}\n", spec.alpha, spec.beta,
                                spec.library_epilogue);
            if (spec.epilogue) append_body(text, plan, "epilogue", *spec.epilogue);
            append_stores(text, plan, spec.stores);
          } else if constexpr (std::is_same_v<T, ReductionSpec>) {
            text += fmt::format("    {} over {}x{}x{}, input = {}\n",
                                kReduceOpNames[static_cast<int>(spec.op)], spec.outer, spec.reduce,
                                spec.inner, format_access(spec.input, plan.graph));
            if (spec.op == ReduceOp::mean_var)
              text += fmt::format("    correction {}\n", spec.correction);
            if (spec.prologue) append_body(text, plan, "prologue", *spec.prologue);
            if (spec.epilogue) append_body(text, plan, "epilogue", *spec.epilogue);
            append_stores(text, plan, spec.stores);
          } else if constexpr (std::is_same_v<T, RowSpec>) {
            const bool norm = spec.op == RowOp::layer_norm || spec.op == RowOp::rms_norm;
            text += fmt::format("    {} {}x{}{}, input = {}\n", row_op_name(spec.op), spec.rows,
                                spec.cols, norm ? fmt::format(" eps {}", spec.eps) : "",
                                format_access(spec.input, plan.graph));
            if (spec.weight)
              text += fmt::format("    weight = {}\n", format_access(*spec.weight, plan.graph));
            if (spec.bias)
              text += fmt::format("    bias = {}\n", format_access(*spec.bias, plan.graph));
            if (spec.prologue) append_body(text, plan, "prologue", *spec.prologue);
            if (spec.epilogue) append_body(text, plan, "epilogue", *spec.epilogue);
            append_stores(text, plan, spec.stores);
          } else if constexpr (std::is_same_v<T, ElementwiseSpec>) {
            append_body(text, plan, "body", spec.body);
            append_stores(text, plan, spec.stores);
          } else if constexpr (std::is_same_v<T, PoolSpec>) {
            append_pool(text, plan, spec);
          } else if constexpr (std::is_same_v<T, ConvSpec>) {
            append_conv(text, plan, spec);
          } else if constexpr (std::is_same_v<T, RecurrentSpec>) {
            append_recurrent(text, plan, spec);
          } else if constexpr (std::is_same_v<T, AttentionSpec>) {
            append_attention(text, plan, spec);
          } else if constexpr (std::is_same_v<T, ScanSpec> || std::is_same_v<T, GatherSpec>) {
            append_scan_or_gather(text, plan, spec);
          } else if constexpr (std::is_same_v<T, OpaqueSpec>) {
            text += fmt::format("    {} (opaque: {})\n", plan.graph.nodes.at(spec.node).op_name,
                                spec.reason);
            for (const Access& input : spec.inputs)
              text += fmt::format("    input = {}\n", format_access(input, plan.graph));
            append_stores(text, plan, spec.stores);
          } else {
            text += fmt::format("    {} -> {}", format_access(spec.source, plan.graph),
                                plan.graph.name_of(spec.target));
            if (spec.destination)
              text += fmt::format(" at {}", format_access(*spec.destination, plan.graph));
            text += "\n";
          }
        },
        subtask.spec);
  }
  for (const BufferSlot& slot : plan.buffers)
    text += fmt::format("buffer {} -> {} {} ({} bytes)\n", slot.value, where_name(slot.where),
                        slot.offset, slot.bytes);
  return text;
}

}  // namespace stitch::plan
