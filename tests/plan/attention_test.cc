// Attention recognition (fusion rule F8, plan/attention_pattern.h) on hand-built graphs shaped as
// torch.export gives them: what is recognised (scale, softmax or ReLU, masks as score bodies, the
// geometry and the operands read through views), and what is not (softmax over another axis, a
// scale after the softmax, an unnormalised chain, attention weights that are also an output, head
// dims over the kernel's). Plus scaled_dot_product_attention's node and its refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "plan/access.h"
#include "plan/attention_pattern.h"
#include "plan/copy_folding.h"
#include "plan/fusion.h"
#include "plan/kernel_choice.h"
#include "plan/planner.h"
#include "plan/subtasks.h"
#include "plan_test_graphs.h"
#include "support/plan_fixtures.h"

namespace stitch::plan {
namespace {

using ir::Op;
using namespace testing;  // NOLINT: test helpers

// What the explicit pattern may vary.
struct Pattern {
  int64_t batch = 2, heads = 4, seq = 77, dim = 64;
  Op scale_op = Op::mul_tensor;  // mul_tensor by 0.125, div_tensor by 8, or relu: no scale node
  int64_t softmax_dim = -1;
  bool relu = false;             // relu instead of softmax
  bool scale_after_softmax = false;
  bool weights_output = false;   // the softmax result is also a graph output
  bool additive_mask = false;    // + mask input [seq, seq] before the softmax
  bool dropout_clone = false;    // a clone of the weights (dropout p = 0 in training mode)
  bool prescale_q = false;       // q * 0.5 before Q·Kᵀ (nn.MultiheadAttention's order)
  bool prescaled_q_output = false;  // ... and that product also a graph output
};

struct Built {
  ir::Graph graph;
  int bmm2 = -1;
};

Built build(const Pattern& p) {
  GraphBuilder b;
  const int64_t bh = p.batch * p.heads;
  auto q = b.input("q", {p.batch, p.heads, p.seq, p.dim});
  auto k = b.input("k", {p.batch, p.heads, p.seq, p.dim});
  auto v = b.input("v", {p.batch, p.heads, p.seq, p.dim});
  std::optional<ir::ValueRef> mask;
  if (p.additive_mask) mask = b.input("mask", {p.seq, p.seq});
  auto kt = b.node("permute", Op::permute, {ref(k), ints({0, 1, 3, 2})},
                   {p.batch, p.heads, p.dim, p.seq});
  ir::ValueRef q_in = q;
  if (p.prescale_q) {
    q_in = b.node("mul_q", Op::mul_tensor, {ref(q), num(0.5)}, {p.batch, p.heads, p.seq, p.dim});
    if (p.prescaled_q_output) b.output(q_in);
  }
  auto qv = b.node("view", Op::view, {ref(q_in), ints({bh, p.seq, p.dim})}, {bh, p.seq, p.dim});
  auto ktv = b.node("view_1", Op::view, {ref(kt), ints({bh, p.dim, p.seq})}, {bh, p.dim, p.seq});
  auto s = b.node("bmm", Op::bmm, {ref(qv), ref(ktv)}, {bh, p.seq, p.seq});
  const std::vector<int64_t> scores{p.batch, p.heads, p.seq, p.seq};
  auto s4 = b.node("view_2", Op::view, {ref(s), ints(scores)}, scores);
  ir::ValueRef x = s4;
  if (p.scale_op == Op::mul_tensor) x = b.node("mul", Op::mul_tensor, {ref(x), num(0.125)}, scores);
  if (p.scale_op == Op::div_tensor) x = b.node("div", Op::div_tensor, {ref(x), num(8.0)}, scores);
  if (mask) x = b.node("add", Op::add_tensor, {ref(x), ref(*mask)}, scores);
  if (p.relu) {
    x = b.node("relu", Op::relu, {ref(x)}, scores);
  } else {
    x = b.node("_softmax", Op::softmax, {ref(x), integer(p.softmax_dim), flag(false)}, scores);
    if (p.weights_output) b.output(x);
  }
  if (p.scale_after_softmax) x = b.node("mul_1", Op::mul_tensor, {ref(x), num(0.5)}, scores);
  if (p.dropout_clone) x = b.node("clone", Op::clone, {ref(x)}, scores);
  auto pv = b.node("view_3", Op::view, {ref(x), ints({bh, p.seq, p.seq})}, {bh, p.seq, p.seq});
  auto vv = b.node("view_4", Op::view, {ref(v), ints({bh, p.seq, p.dim})}, {bh, p.seq, p.dim});
  auto o = b.node("bmm_1", Op::bmm, {ref(pv), ref(vv)}, {bh, p.seq, p.dim});
  const std::vector<int64_t> out{p.batch, p.heads, p.seq, p.dim};
  b.output(b.node("view_5", Op::view, {ref(o), ints(out)}, out));
  return {b.graph(), o.index};
}

std::optional<AttentionMatch> match(const Built& built) {
  EXPECT_TRUE(ir::verify(built.graph).ok());
  auto values = fold_views(built.graph);
  EXPECT_TRUE(values.ok());
  return match_attention(built.graph, Uses(built.graph), *values, built.bmm2);
}

const Group* attention_group(const Fusion& fusion) {
  for (const Group& group : fusion.groups)
    if (group.kind == GroupKind::attention) return &group;
  return nullptr;
}

TEST(AttentionPattern, ScaledSoftmaxIsOneGroupReadingTheInputsThroughViews) {
  const Built built = build(Pattern{});
  const auto m = match(built);
  ASSERT_TRUE(m.has_value());
  const AttentionSpec& s = m->spec;
  EXPECT_EQ(s.norm, AttentionNorm::softmax);
  EXPECT_DOUBLE_EQ(s.scale, 0.125);
  EXPECT_FALSE(s.causal);
  EXPECT_EQ(std::vector<int64_t>({s.batch, s.heads, s.queries, s.keys, s.head_dim, s.value_dim}),
            std::vector<int64_t>({2, 4, 77, 77, 64, 64}));
  // k read as itself ([b, h, keys, dim], unit stride on dim), not as its transposed view.
  EXPECT_EQ(s.k.base.kind, ir::ValueRef::Kind::input);
  EXPECT_EQ(s.k.shape, (std::vector<int64_t>{2, 4, 77, 64}));
  EXPECT_EQ(s.k.strides, (std::vector<int64_t>{4 * 77 * 64, 77 * 64, 64, 1}));
  EXPECT_EQ(s.q.base.index, 0);
  EXPECT_EQ(s.v.base.index, 2);
  EXPECT_TRUE(m->scores.empty());  // nothing between the scale and the softmax

  auto values = fold_views(built.graph);
  const Fusion fusion = fuse(built.graph, *values);
  const Group* group = attention_group(fusion);
  ASSERT_NE(group, nullptr);
  EXPECT_EQ(fusion.groups.size(), 1u);  // the whole graph is the attention
  EXPECT_EQ(group->anchor, built.bmm2);
}

TEST(AttentionPattern, QScaledBeforeTheProductJoinsTheScaleAndIsClaimed) {
  Pattern p;
  p.prescale_q = true;
  const Built built = build(p);
  const auto m = match(built);
  ASSERT_TRUE(m.has_value());
  EXPECT_DOUBLE_EQ(m->spec.scale, 0.125 * 0.5);
  EXPECT_EQ(m->spec.q.base.kind, ir::ValueRef::Kind::input);  // q read before the mul
  EXPECT_EQ(m->spec.q.base.index, 0);
  const bool claimed = std::any_of(m->pattern.begin(), m->pattern.end(), [&](int node) {
    return built.graph.nodes[node].id == "mul_q";
  });
  EXPECT_TRUE(claimed);

  p.prescaled_q_output = true;  // the product is needed anyway: it stays, and Q is read from it
  const Built shared = build(p);
  const auto kept = match(shared);
  ASSERT_TRUE(kept.has_value());
  EXPECT_DOUBLE_EQ(kept->spec.scale, 0.125);
  EXPECT_EQ(kept->spec.q.base.kind, ir::ValueRef::Kind::node);
}

TEST(AttentionPattern, DivisionScaleAndAdditiveMaskBecomeScaleAndScoresBody) {
  Pattern p;
  p.scale_op = Op::div_tensor;
  p.additive_mask = true;
  const auto m = match(build(p));
  ASSERT_TRUE(m.has_value());
  EXPECT_DOUBLE_EQ(m->spec.scale, 1.0 / 8.0);
  ASSERT_EQ(m->scores.size(), 1u);  // the add
  auto plan = make_plan(build(p).graph, PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->subtasks.size(), 1u);
  const auto* spec = std::get_if<AttentionSpec>(&plan->subtasks[0].spec);
  ASSERT_NE(spec, nullptr);
  ASSERT_TRUE(spec->scores.has_value());
  ASSERT_EQ(spec->scores->loads.size(), 2u);  // the score, the mask broadcast over batch, heads
  EXPECT_EQ(spec->scores->loads[1].strides, (std::vector<int64_t>{0, 0, 77, 1}));
  EXPECT_EQ(plan->subtasks[0].kernel, "flash_attention");
}

// The products' arithmetic per track (kernel_choice.h): the track's tensor cores on tf32 / bf16;
// on fp32 3xTF32 or FP32 FMA as kAttentionFp32SplitTf32x3 says, FMA when TF32 is not allowed
// (--strict-fp32-gemm); attention_math_name reads it back as the emitter does.
TEST(AttentionKernelChoice, EachTrackGetsItsArithmetic) {
  const auto subtask_for = [](TensorMath math, bool allow_tf32x3) {
    PlanOptions options;
    options.tensor_math = math;
    options.allow_tf32x3 = allow_tf32x3;
    auto plan = make_plan(build(Pattern{}).graph, options);
    EXPECT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_EQ(plan->subtasks.size(), 1u);
    return plan->subtasks.at(0);
  };
  const Subtask fp32 = subtask_for(TensorMath::fp32, true);
  EXPECT_EQ(fp32.kernel, "flash_attention");
  EXPECT_EQ(fp32.tunables.count("tensor_math"), 0u);
  EXPECT_EQ(fp32.tunables.count("split_tf32x3"), kAttentionFp32SplitTf32x3 ? 1u : 0u);
  EXPECT_EQ(attention_math_name(fp32), kAttentionFp32SplitTf32x3 ? "tf32x3" : "fp32_fma");

  const Subtask strict = subtask_for(TensorMath::fp32, false);
  EXPECT_EQ(strict.tunables.count("split_tf32x3"), 0u);
  EXPECT_EQ(attention_math_name(strict), "fp32_fma");

  for (TensorMath math : {TensorMath::tf32, TensorMath::bf16}) {
    const Subtask tensor = subtask_for(math, true);
    EXPECT_EQ(subtask_tensor_math(tensor), math);
    EXPECT_EQ(tensor.tunables.count("split_tf32x3"), 0u);
    EXPECT_EQ(attention_math_name(tensor), math == TensorMath::tf32 ? "tf32" : "bf16");
  }
}

TEST(AttentionPattern, ReluInsteadOfSoftmaxIsTheUnnormalisedVariant) {
  Pattern p;
  p.relu = true;
  const auto m = match(build(p));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->spec.norm, AttentionNorm::none);
  ASSERT_EQ(m->scores.size(), 1u);  // relu is the scores body's last step
}

TEST(AttentionPattern, DropoutCloneOfTheWeightsIsClaimed) {
  Pattern p;
  p.dropout_clone = true;
  const Built built = build(p);
  const auto m = match(built);
  ASSERT_TRUE(m.has_value());
  int clone = -1;
  for (size_t n = 0; n < built.graph.nodes.size(); ++n)
    if (built.graph.nodes[n].op == Op::clone) clone = static_cast<int>(n);
  ASSERT_GE(clone, 0);
  EXPECT_NE(std::find(m->pattern.begin(), m->pattern.end(), clone), m->pattern.end());
}

TEST(AttentionPattern, NoScaleNodeKeepsScaleOne) {
  Pattern p;
  p.scale_op = Op::relu;  // no scale node
  const auto m = match(build(p));
  ASSERT_TRUE(m.has_value());
  EXPECT_DOUBLE_EQ(m->spec.scale, 1.0);
}

TEST(AttentionPattern, SoftmaxOverAnotherAxisIsNotAttention) {
  Pattern p;
  p.softmax_dim = 2;
  EXPECT_FALSE(match(build(p)).has_value());
  auto values = fold_views(build(p).graph);
  EXPECT_EQ(attention_group(fuse(build(p).graph, *values)), nullptr);
}

TEST(AttentionPattern, ScaleAfterTheSoftmaxIsNotAttention) {
  Pattern p;
  p.scale_after_softmax = true;
  EXPECT_FALSE(match(build(p)).has_value());
}

TEST(AttentionPattern, AttentionWeightsThatAreAlsoAnOutputStayUnfused) {
  Pattern p;
  p.weights_output = true;
  EXPECT_FALSE(match(build(p)).has_value());
}

TEST(AttentionPattern, HeadDimOverTheKernelsIsNotAttention) {
  Pattern p;
  p.dim = kAttentionMaxHeadDim + 8;
  EXPECT_FALSE(match(build(p)).has_value());
}

TEST(AttentionPattern, TwoGemmsWithoutNormaliserStayTwoGemms) {
  GraphBuilder b;
  auto x = b.input("x", {4, 16, 32});
  auto y = b.input("y", {4, 32, 16});
  auto z = b.input("z", {4, 16, 8});
  auto s = b.node("bmm", Op::bmm, {ref(x), ref(y)}, {4, 16, 16});
  auto t = b.node("mul", Op::mul_tensor, {ref(s), num(2.0)}, {4, 16, 16});
  auto o = b.node("bmm_1", Op::bmm, {ref(t), ref(z)}, {4, 16, 8});
  b.output(o);
  EXPECT_FALSE(match({b.graph(), o.index}).has_value());
}

// scaled_dot_product_attention(q, k, v, mask, dropout_p, is_causal) on [2, 3, 10, 32] tensors.
ir::Graph sdpa_graph(double dropout, bool causal, bool with_mask, int64_t dim = 32) {
  GraphBuilder b;
  const std::vector<int64_t> shape{2, 3, 10, dim};
  auto q = b.input("q", shape);
  auto k = b.input("k", shape);
  auto v = b.input("v", shape);
  ir::Arg mask;
  if (with_mask) mask = ref(b.input("mask", {10, 10}, ir::DType::boolean));
  b.output(b.node("sdpa", Op::scaled_dot_product_attention,
                  {ref(q), ref(k), ref(v), mask, num(dropout), flag(causal)}, shape));
  return b.graph();
}

TEST(AttentionPattern, SdpaWithMaskAndCausalIsOneAttentionSubtask) {
  const ir::Graph graph = sdpa_graph(0.0, true, true);
  EXPECT_EQ(sdpa_unsupported_reason(graph, graph.nodes[0]), "");
  auto plan = make_plan(graph, PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->subtasks.size(), 1u);
  const auto* spec = std::get_if<AttentionSpec>(&plan->subtasks[0].spec);
  ASSERT_NE(spec, nullptr);
  EXPECT_TRUE(spec->causal);
  EXPECT_NEAR(spec->scale, 1.0 / std::sqrt(32.0), 1e-15);
  EXPECT_EQ(spec->mask_kind, AttentionMask::boolean);
  EXPECT_EQ(spec->mask->strides, (std::vector<int64_t>{0, 0, 10, 1}));
  EXPECT_FALSE(spec->scores.has_value());
}

TEST(AttentionPattern, SdpaWithDropoutOrWideHeadsIsRefusedByName) {
  const ir::Graph dropout = sdpa_graph(0.1, false, false);
  EXPECT_NE(sdpa_unsupported_reason(dropout, dropout.nodes[0]).find("dropout"), std::string::npos);
  auto plan = make_plan(dropout, PlanOptions{});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message.find("dropout"), std::string::npos) << plan.error().message;
  const ir::Graph wide = sdpa_graph(0.0, false, false, 256);
  EXPECT_NE(sdpa_unsupported_reason(wide, wide.nodes[0]).find("head dims"), std::string::npos);
}

}  // namespace
}  // namespace stitch::plan

namespace stitch::plan {
namespace {

struct ModulePlan {
  int copies = 0;
  const AttentionSpec* attention = nullptr;
  const MatmulSpec* in_projection = nullptr;   // the first GEMM
  const MatmulSpec* out_projection = nullptr;  // the GEMM after the attention
};

ModulePlan count_module_plan(const Plan& plan) {
  ModulePlan counted;
  for (const Subtask& subtask : plan.subtasks) {
    if (std::holds_alternative<CopySpec>(subtask.spec)) ++counted.copies;
    if (const auto* spec = std::get_if<AttentionSpec>(&subtask.spec)) counted.attention = spec;
    if (const auto* spec = std::get_if<MatmulSpec>(&subtask.spec)) {
      if (counted.in_projection == nullptr) counted.in_projection = spec;
      if (counted.attention != nullptr && counted.out_projection == nullptr)
        counted.out_projection = spec;
    }
  }
  return counted;
}

// The in-projection of a [batch 4, seq 96, embed 128] batch-first input: one 2-D GEMM over the
// 384 rows as they lie (batch-major), its bias in the GEMM, not a GEMM batched over the sequence.
void expect_row_gemm(const Plan& plan, const MatmulSpec& gemm) {
  EXPECT_EQ(gemm.batch, 1);
  EXPECT_EQ(gemm.m, 4 * 96);
  EXPECT_EQ(gemm.n, 3 * 128);
  EXPECT_EQ(gemm.k, 128);
  EXPECT_EQ(plan.graph.name_of(gemm.a.base), "x");
  EXPECT_EQ(gemm.a.strides.back(), 1);
  EXPECT_EQ(gemm.library_epilogue, "bias");
}

// q, k and v read through the strides of the in-projection's [batch·seq, 3·embed] output (the
// packed q, k, v columns in order), split into batch 4 and heads 8 (torch's head order: the
// embed columns of a head are h·16 .. h·16 + 15).
void expect_qkv_in_projection(const Plan& plan, const AttentionSpec& spec) {
  EXPECT_EQ(spec.batch, 4);
  EXPECT_EQ(spec.heads, 8);
  const std::vector<int64_t> strides{96 * 384, 16, 384, 1};  // batch, head, query, column
  int64_t offset = 0;
  for (const Access* operand : {&spec.q, &spec.k, &spec.v}) {
    EXPECT_EQ(plan.graph.name_of(operand->base), "bmm_mm");
    EXPECT_EQ(operand->offset, offset);
    EXPECT_EQ(operand->strides, strides);
    offset += 128;
  }
}

// The attention output lands straight in the out-projection's A operand as batch-first rows
// ([batch·seq, heads·dim]: the copy that transposed it folded into the attention's store), and the
// out-projection runs over those rows, so its product is batch-first too (nothing permutes it
// back): it is `out_rows`' whole buffer, read contiguous by the rest.
void expect_batch_first_out_projection(const Plan& plan, const AttentionSpec& attention,
                                       const MatmulSpec& out_projection) {
  ASSERT_TRUE(attention.output.has_value());
  EXPECT_EQ(attention.output->base, attention.stores[0].value);
  // [batch, head, query, column] -> row b·96 + s, column h·16 + d.
  EXPECT_EQ(attention.output->strides, (std::vector<int64_t>{96 * 128, 16, 128, 1}));
  EXPECT_EQ(attention.output->offset, 0);
  EXPECT_EQ(out_projection.a.base, attention.stores[0].value);
  EXPECT_EQ(out_projection.a.strides.back(), 1);
  EXPECT_EQ(out_projection.a.strides[1], 128);
  EXPECT_EQ(out_projection.m, 4 * 96);
  const ir::ValueRef product = out_projection.stores[0].value;
  for (const Subtask& subtask : plan.subtasks)
    for (const Access& read : subtask_reads(subtask))
      if (read.base == product) EXPECT_TRUE(read.is_contiguous()) << subtask.id;
}

// The plan of a module task (tests/tasks/<task>.py): its subtask and copy counts, the
// in-projection one 2-D GEMM over the rows, q/k/v read through the GEMM's output, the attention's
// output the out-projection's batch-first rows.
void expect_module_plan(const std::string& task, size_t subtasks, int copies) {
  auto graph = ir::load_graph(testing::data_path(task + ".graph.json"));
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  auto plan = make_plan(*graph, stitch::testing::plan_fixture_options(task));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const ModulePlan counted = count_module_plan(*plan);
  EXPECT_EQ(plan->subtasks.size(), subtasks);
  EXPECT_EQ(counted.copies, copies);
  ASSERT_NE(counted.in_projection, nullptr);
  expect_row_gemm(*plan, *counted.in_projection);
  ASSERT_NE(counted.attention, nullptr);
  expect_qkv_in_projection(*plan, *counted.attention);
  ASSERT_NE(counted.out_projection, nullptr);
  expect_batch_first_out_projection(*plan, *counted.attention, *counted.out_projection);
}

// nn.MultiheadAttention (batch_first): in-projection, attention, out-projection — no copy (was 5
// subtasks: the attention output's transpose to [seq, batch, embed] rows and the output's back to
// batch-first were copies). The out-projection writes the caller's output buffer.
TEST(AttentionModules, MultiheadAttentionPlansThreeSubtasksWithoutCopies) {
  expect_module_plan("plan_multihead_attention", 3, 0);
  auto graph = ir::load_graph(testing::data_path("plan_multihead_attention.graph.json"));
  ASSERT_TRUE(graph.ok());
  auto plan = make_plan(*graph, stitch::testing::plan_fixture_options("plan_multihead_attention"));
  ASSERT_TRUE(plan.ok());
  const auto* out_projection = std::get_if<MatmulSpec>(&plan->subtasks.back().spec);
  ASSERT_NE(out_projection, nullptr);
  const std::string written = plan->graph.name_of(out_projection->stores[0].value);
  bool to_output = false;
  for (const BufferSlot& slot : plan->buffers)
    to_output |= slot.value == written && slot.where == BufferSlot::Where::output;
  EXPECT_TRUE(to_output) << written;
}

// nn.TransformerEncoderLayer: the same three, two residual + LayerNorm row subtasks and the MLP's
// two GEMMs — no copy (was 8 subtasks, 1 copy); the first LayerNorm reads the out-projection's
// rows in order (was a transposed read).
TEST(AttentionModules, TransformerEncoderLayerPlansWithoutCopies) {
  expect_module_plan("plan_transformer_encoder_layer", 7, 0);
}

// nn.TransformerEncoderLayer sequence-first ([seq 40, batch 3, embed 64], ViT's layout): the
// out-projection reads [seq·batch, embed] rows with nothing permuting its product afterwards; the
// attention writes those rows (8 subtasks and 1 copy before), and linear1's ReLU rides the GEMM.
TEST(AttentionModules, SequenceFirstEncoderLayerWritesSequenceMajorRows) {
  auto graph = ir::load_graph(testing::data_path("plan_transformer_sequence_first.graph.json"));
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  auto plan = make_plan(*graph, PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const ModulePlan counted = count_module_plan(*plan);
  EXPECT_EQ(plan->subtasks.size(), 7u);
  EXPECT_EQ(counted.copies, 0);
  ASSERT_NE(counted.attention, nullptr);
  ASSERT_TRUE(counted.attention->output.has_value());
  // [batch, head, query, column] -> row s·3 + b, column h·16 + d.
  EXPECT_EQ(counted.attention->output->strides, (std::vector<int64_t>{64, 16, 3 * 64, 1}));
  ASSERT_NE(counted.out_projection, nullptr);
  EXPECT_EQ(counted.out_projection->a.base, counted.attention->stores[0].value);
  int relu_gemms = 0;
  for (const Subtask& subtask : plan->subtasks)
    if (const auto* gemm = std::get_if<MatmulSpec>(&subtask.spec)) {
      EXPECT_FALSE(gemm->epilogue.has_value()) << subtask.id;
      relu_gemms += gemm->library_epilogue == "bias_relu" ? 1 : 0;
    }
  EXPECT_EQ(relu_gemms, 1);
}

// A copy that reads a whole buffer in a permuted order is seen from the copy's side as the buffer
// in memory order; skipping, repeating or broadcast reads are not.
TEST(CopyFolding, InverseAccessOfAPermutedReadIsTheBufferInMemoryOrder) {
  const ir::ValueRef source{ir::ValueRef::Kind::node, 0, 0};
  const ir::ValueRef copy{ir::ValueRef::Kind::node, 1, 0};
  // [4, 8, 96, 16] read as [96, 4, 8, 16] (permute(2, 0, 1, 3)).
  const Access read{source, 0, {96, 4, 8, 16}, {16, 12288, 1536, 1}};
  const auto inverse = inverse_access(read, 4 * 8 * 96 * 16, copy);
  ASSERT_TRUE(inverse.has_value());
  EXPECT_EQ(inverse->base, copy);
  EXPECT_EQ(inverse->shape, (std::vector<int64_t>{4, 8, 96, 16}));
  EXPECT_EQ(inverse->strides, (std::vector<int64_t>{128, 16, 512, 1}));
  // The attention's [b, h, s, d] store through it: [seq, batch, heads·dim] rows.
  const auto placed = through_copy_access(contiguous_access(source, {4, 8, 96, 16}), *inverse);
  ASSERT_TRUE(placed.has_value());
  EXPECT_EQ(placed->strides, (std::vector<int64_t>{128, 16, 512, 1}));
  EXPECT_FALSE(inverse_access(Access{source, 0, {96, 4, 8, 8}, {16, 12288, 1536, 1}},
                              4 * 8 * 96 * 16, copy));  // skips half of each row
  EXPECT_FALSE(inverse_access(Access{source, 0, {96, 4, 8, 16}, {16, 0, 1536, 1}},
                              4 * 8 * 96 * 16, copy));  // broadcast
  EXPECT_FALSE(inverse_access(Access{source, 16, {96, 4, 8, 16}, {16, 12288, 1536, 1}},
                              4 * 8 * 96 * 16, copy));  // offset
  EXPECT_FALSE(inverse_access(Access{source, 0, {2, 3}, {2, 1}}, 6, copy));  // overlapping rows
}

}  // namespace
}  // namespace stitch::plan
