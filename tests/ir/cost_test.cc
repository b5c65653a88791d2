// Work estimates (cost.h) for the formula families, checked against hand-computed numbers.
#include <gtest/gtest.h>

#include "ir/cost.h"
#include "test_graphs.h"

namespace stitch::ir {
namespace {

using namespace testing;  // NOLINT: test helpers

TEST(Cost, Addmm) {
  // bias [N], x [M,K], w^T [K,N] -> [M,N]: 2*M*N*K + M*N flops.
  const int64_t m = 8, k = 16, n = 32;
  Graph graph;
  graph.inputs.push_back({"x", InputKind::user, contiguous({m, k}), "", ""});
  graph.params.push_back({"b", ParamKind::parameter, contiguous({n})});
  graph.params.push_back({"wt", ParamKind::parameter, contiguous({k, n})});
  graph.nodes.push_back(make_node("addmm", Op::addmm,
                                  {Arg{param_ref(0)}, Arg{input_ref(0)}, Arg{param_ref(1)}},
                                  {contiguous({m, n})}));
  ASSERT_TRUE(verify(graph).ok());
  const NodeCost cost = estimate_node_cost(graph, graph.nodes[0]);
  EXPECT_DOUBLE_EQ(cost.flops, 2.0 * m * n * k + m * n);
  EXPECT_DOUBLE_EQ(cost.bytes, 4.0 * (n + m * k + k * n + m * n));
  EXPECT_TRUE(cost.known);
}

TEST(Cost, MmAndBmm) {
  Graph graph;
  graph.inputs.push_back({"a", InputKind::user, contiguous({3, 5, 7}), "", ""});
  graph.inputs.push_back({"b", InputKind::user, contiguous({3, 7, 11}), "", ""});
  graph.nodes.push_back(
      make_node("bmm", Op::bmm, {Arg{input_ref(0)}, Arg{input_ref(1)}}, {contiguous({3, 5, 11})}));
  EXPECT_DOUBLE_EQ(estimate_node_cost(graph, graph.nodes[0]).flops, 2.0 * 3 * 5 * 11 * 7);
}

TEST(Cost, Convolution) {
  // x [2, 4, 10, 10], w [6, 4, 3, 3], bias, stride 1, no padding -> [2, 6, 8, 8].
  Graph graph;
  graph.inputs.push_back({"x", InputKind::user, contiguous({2, 4, 10, 10}), "", ""});
  graph.params.push_back({"w", ParamKind::parameter, contiguous({6, 4, 3, 3})});
  graph.params.push_back({"b", ParamKind::parameter, contiguous({6})});
  auto conv_args = [](bool transposed, int64_t groups) {
    return std::vector<Arg>{Arg{input_ref(0)},
                            Arg{param_ref(0)},
                            Arg{param_ref(1)},
                            Arg{ArgList{Arg{int64_t{1}}, Arg{int64_t{1}}}},
                            Arg{ArgList{Arg{int64_t{0}}, Arg{int64_t{0}}}},
                            Arg{ArgList{Arg{int64_t{1}}, Arg{int64_t{1}}}},
                            Arg{transposed},
                            Arg{ArgList{Arg{int64_t{0}}, Arg{int64_t{0}}}},
                            Arg{groups}};
  };
  graph.nodes.push_back(
      make_node("conv", Op::convolution, conv_args(false, 1), {contiguous({2, 6, 8, 8})}));
  const double n_out = 2 * 6 * 8 * 8;
  EXPECT_DOUBLE_EQ(estimate_node_cost(graph, graph.nodes[0]).flops, 2 * n_out * 4 * 9 + n_out);

  // Grouped: weight [6, 2, 3, 3] with groups = 2 -> C_in/groups = 2 per output element.
  graph.params[0].type = contiguous({6, 2, 3, 3});
  graph.nodes[0].args = conv_args(false, 2);
  EXPECT_DOUBLE_EQ(estimate_node_cost(graph, graph.nodes[0]).flops, 2 * n_out * 2 * 9 + n_out);

  // Transposed: x [2, 4, 10, 10], weight [4, 6, 3, 3] -> [2, 6, 12, 12]; every input element
  // scatters into 6 * 9 outputs.
  graph.params[0].type = contiguous({4, 6, 3, 3});
  graph.nodes[0].args = conv_args(true, 1);
  graph.nodes[0].outputs = {contiguous({2, 6, 12, 12})};
  EXPECT_DOUBLE_EQ(estimate_node_cost(graph, graph.nodes[0]).flops,
                   2.0 * (2 * 4 * 10 * 10) * 6 * 9 + 2 * 6 * 12 * 12);
}

TEST(Cost, ReluAndViews) {
  Graph graph = tiny_graph();
  const NodeCost relu = estimate_node_cost(graph, graph.nodes[0]);
  EXPECT_DOUBLE_EQ(relu.flops, 32);
  EXPECT_DOUBLE_EQ(relu.bytes, 2 * 32 * 4);
  graph.nodes.push_back(make_node(
      "view", Op::view, {Arg{node_ref(0)}, Arg{ArgList{Arg{int64_t{32}}}}}, {contiguous({32})}));
  const NodeCost view = estimate_node_cost(graph, graph.nodes[1]);
  EXPECT_EQ(view.flops, 0);
  EXPECT_EQ(view.bytes, 0);
}

TEST(Cost, SameInputReadOnce) {
  Graph graph = tiny_graph();
  graph.nodes[0] = make_node("mul", Op::mul_tensor, {Arg{input_ref(0)}, Arg{input_ref(0)}},
                             {contiguous({4, 8})});
  EXPECT_DOUBLE_EQ(estimate_node_cost(graph, graph.nodes[0]).bytes, 2 * 32 * 4);
}

TEST(Cost, PoolingAttentionAndRecurrent) {
  Graph graph;
  graph.inputs.push_back({"x", InputKind::user, contiguous({1, 2, 8, 8}), "", ""});
  graph.nodes.push_back(
      make_node("pool", Op::max_pool2d_with_indices,
                {Arg{input_ref(0)}, Arg{ArgList{Arg{int64_t{2}}}}, Arg{ArgList{Arg{int64_t{2}}}}},
                {contiguous({1, 2, 4, 4}), contiguous({1, 2, 4, 4}, DType::int64)}));
  EXPECT_DOUBLE_EQ(estimate_node_cost(graph, graph.nodes[0]).flops, 32.0 * 4);

  Graph attention;
  attention.inputs.push_back({"q", InputKind::user, contiguous({2, 4, 16, 8}), "", ""});
  attention.inputs.push_back({"k", InputKind::user, contiguous({2, 4, 32, 8}), "", ""});
  attention.inputs.push_back({"v", InputKind::user, contiguous({2, 4, 32, 8}), "", ""});
  attention.nodes.push_back(make_node("sdpa", Op::scaled_dot_product_attention,
                                      {Arg{input_ref(0)}, Arg{input_ref(1)}, Arg{input_ref(2)}},
                                      {contiguous({2, 4, 16, 8})}));
  EXPECT_DOUBLE_EQ(estimate_node_cost(attention, attention.nodes[0]).flops,
                   8.0 * 16 * 32 * (2 * 8 + 2 * 8 + 5));

  // GRU, batch_first, x [B=2, T=5, I=3], H=4: weights [12,3], [12,4], biases [12], [12].
  Graph gru;
  gru.inputs.push_back({"x", InputKind::user, contiguous({2, 5, 3}), "", ""});
  gru.inputs.push_back({"h0", InputKind::user, contiguous({1, 2, 4}), "", ""});
  for (auto shape : {std::vector<int64_t>{12, 3}, {12, 4}, {12}, {12}})
    gru.params.push_back(
        {"p" + std::to_string(gru.params.size()), ParamKind::parameter, contiguous(shape)});
  const ArgList params = {Arg{param_ref(0)}, Arg{param_ref(1)}, Arg{param_ref(2)},
                          Arg{param_ref(3)}};
  gru.nodes.push_back(make_node("gru", Op::gru_input,
                                {Arg{input_ref(0)}, Arg{input_ref(1)}, Arg{params}, Arg{true},
                                 Arg{int64_t{1}}, Arg{0.0}, Arg{true}, Arg{false}, Arg{true}},
                                {contiguous({2, 5, 4}), contiguous({1, 2, 4})}));
  const double per_step = 2.0 * (36 + 48) + 2.0 * (12 + 12) + 24;
  EXPECT_DOUBLE_EQ(estimate_node_cost(gru, gru.nodes[0]).flops, per_step * 2 * 5);
}

TEST(Cost, HarnessCaptureOfConvBatchNorm) {
  auto graph = load_graph(fixture_path("captured_73_conv2d_batchnorm_scaling.json"));
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  // conv: x [128, 8, 128, 128], w [64, 8, 3, 3] + bias -> [128, 64, 126, 126].
  const double n_out = 128.0 * 64 * 126 * 126;
  EXPECT_DOUBLE_EQ(estimate_node_cost(*graph, graph->nodes[0]).flops, 2 * n_out * 8 * 9 + n_out);
  EXPECT_DOUBLE_EQ(estimate_node_cost(*graph, graph->nodes[1]).flops, 8 * n_out);
}

TEST(Cost, OpaqueIsUnknown) {
  Graph graph = tiny_graph();
  graph.nodes[0].op = Op::opaque;
  graph.nodes[0].op_name = "aten.special_op.default";
  const NodeCost cost = estimate_node_cost(graph, graph.nodes[0]);
  EXPECT_FALSE(cost.known);
  EXPECT_EQ(cost.flops, 0);
  EXPECT_GT(cost.bytes, 0);
  EXPECT_EQ(estimate_graph_cost(graph).unknown_nodes, 1);
}

}  // namespace
}  // namespace stitch::ir
