// graph.json loading and saving on the handwritten fixtures in tests/ir/data/: contents, round
// trips (parse -> serialize -> parse is equal; serialization is byte-for-byte stable).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "ir/ir.h"
#include "test_graphs.h"
#include "util/fs.h"

namespace stitch::ir {
namespace {

using testing::fixture_path;

Graph load_fixture(const std::string& name) {
  auto graph = load_graph(fixture_path(name));
  EXPECT_TRUE(graph.ok()) << (graph.ok() ? "" : graph.error().message);
  return graph.ok() ? *graph : Graph{};
}

TEST(GraphJson, LoadsMlp) {
  const Graph graph = load_fixture("mlp.json");
  EXPECT_EQ(graph.task.name, "mlp");
  EXPECT_EQ(graph.torch_version, "2.11.0");
  EXPECT_TRUE(graph.training);
  ASSERT_EQ(graph.inputs.size(), 1u);
  EXPECT_EQ(graph.inputs[0].type.shape, (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(graph.inputs[0].distribution, "randn");
  ASSERT_EQ(graph.params.size(), 4u);
  EXPECT_EQ(graph.params[1].name, "network.0.bias");
  ASSERT_EQ(graph.nodes.size(), 5u);
  const Node& addmm = graph.nodes[1];
  EXPECT_EQ(addmm.op, Op::addmm);
  EXPECT_EQ(addmm.module, "network.0");
  ASSERT_EQ(addmm.args.size(), 3u);
  EXPECT_EQ(*addmm.args[0].ref(), (ValueRef{ValueRef::Kind::param, 1, 0}));
  EXPECT_EQ(*addmm.args[1].ref(), (ValueRef{ValueRef::Kind::input, 0, 0}));
  EXPECT_EQ(*addmm.args[2].ref(), (ValueRef{ValueRef::Kind::node, 0, 0}));
  EXPECT_EQ(graph.nodes[0].outputs[0].strides, (std::vector<int64_t>{1, 16}));
  // Ints and floats keep their kind.
  const Node& last = graph.nodes[4];
  ASSERT_NE(last.kwarg("beta"), nullptr);
  EXPECT_TRUE(std::holds_alternative<int64_t>(last.kwarg("beta")->value));
  EXPECT_TRUE(std::holds_alternative<double>(last.kwarg("alpha")->value));
  ASSERT_EQ(graph.outputs.size(), 1u);
  EXPECT_EQ(graph.name_of(graph.outputs[0]), "addmm_1");
  EXPECT_EQ(graph.type_of(graph.outputs[0]).shape, (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(graph.find_node("relu"), 2);
  EXPECT_EQ(graph.find_node("nope"), -1);
}

TEST(GraphJson, LoadsRandomInputsAndSpecialArguments) {
  const Graph graph = load_fixture("random_input.json");
  EXPECT_FALSE(graph.training);
  ASSERT_EQ(graph.inputs.size(), 3u);
  EXPECT_EQ(graph.inputs[1].kind, InputKind::random);
  EXPECT_EQ(graph.inputs[1].source_op, "aten.randn.default");
  EXPECT_EQ(graph.inputs[2].type.dtype, DType::boolean);
  EXPECT_EQ(graph.params[0].kind, ParamKind::buffer);
  EXPECT_EQ(graph.params[0].type.rank(), 0);
  EXPECT_EQ(graph.params[1].kind, ParamKind::constant);

  const Node& clamp = graph.nodes[3];
  EXPECT_EQ(clamp.op, Op::clamp);
  EXPECT_TRUE(std::isinf(*clamp.args[1].as_double()));
  EXPECT_LT(*clamp.args[1].as_double(), 0);
  EXPECT_DOUBLE_EQ(*clamp.args[2].as_double(), 1e-05);

  const Node& copy = graph.nodes[4];
  EXPECT_EQ(copy.op, Op::to_copy);
  EXPECT_EQ(copy.kwarg("dtype")->as_dtype(), DType::float16);
  const auto* device = std::get_if<EnumArg>(&copy.kwarg("device")->value);
  ASSERT_NE(device, nullptr);
  EXPECT_EQ(device->kind, EnumArg::Kind::device);
  EXPECT_EQ(device->value, "cpu");
  const auto* memory_format = std::get_if<EnumArg>(&copy.kwarg("memory_format")->value);
  ASSERT_NE(memory_format, nullptr);
  EXPECT_EQ(memory_format->value, "torch.contiguous_format");
  EXPECT_EQ(copy.kwarg("non_blocking")->as_bool(), false);
  EXPECT_TRUE(std::isnan(*copy.kwarg("nan_fill")->as_double()));
  // kwargs keep file order.
  ASSERT_EQ(copy.kwargs.size(), 6u);
  EXPECT_EQ(copy.kwargs[0].first, "dtype");
  EXPECT_EQ(copy.kwargs[5].first, "nan_fill");
  ASSERT_EQ(graph.outputs.size(), 2u);
  EXPECT_EQ(graph.outputs[1], (ValueRef{ValueRef::Kind::input, 0, 0}));
}

TEST(GraphJson, LoadsLstmWithMultiOutputReferences) {
  const Graph graph = load_fixture("lstm.json");
  const Node& lstm = graph.nodes[0];
  EXPECT_EQ(lstm.op, Op::lstm_input);
  ASSERT_EQ(lstm.outputs.size(), 3u);
  const ArgList* hx = lstm.args[1].list();
  ASSERT_NE(hx, nullptr);
  EXPECT_EQ(*(*hx)[1].ref(), (ValueRef{ValueRef::Kind::input, 2, 0}));
  ASSERT_NE(lstm.args[2].list(), nullptr);
  EXPECT_EQ(lstm.args[2].list()->size(), 4u);
  EXPECT_EQ(lstm.args[5].as_double(), 0.0);
  EXPECT_TRUE(std::holds_alternative<double>(lstm.args[5].value));

  const Node& mul = graph.nodes[4];
  EXPECT_EQ(*mul.args[0].ref(), (ValueRef{ValueRef::Kind::node, 0, 1}));
  EXPECT_EQ(*mul.args[1].ref(), (ValueRef{ValueRef::Kind::node, 0, 2}));
  EXPECT_EQ(graph.name_of(graph.outputs[1]), "lstm.2");
  EXPECT_EQ(graph.type_of(graph.outputs[1]).shape, (std::vector<int64_t>{1, 2, 4}));
}

TEST(GraphJson, UnknownOpsLoadOpaqueAndUnknownKeysAreIgnored) {
  const Graph graph = load_fixture("opaque.json");
  ASSERT_EQ(graph.nodes.size(), 3u);
  EXPECT_EQ(graph.nodes[0].op, Op::opaque);
  EXPECT_EQ(graph.nodes[0].op_name, "aten.special_bessel_j0.default");
  EXPECT_EQ(graph.nodes[1].op, Op::opaque);
  EXPECT_EQ(graph.nodes[1].outputs.size(), 2u);
  EXPECT_EQ(graph.nodes[2].op, Op::relu);
  EXPECT_EQ(graph.torch_version, "2.12.0.dev");
  EXPECT_TRUE(graph.task.constants_json.empty());
  // The opaque op's name survives a round trip.
  const std::string text = serialize_graph(graph);
  EXPECT_NE(text.find("\"aten.special_bessel_j0.default\""), std::string::npos);
}

class GraphRoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(GraphRoundTrip, ParseSerializeParseIsEqualAndStable) {
  const Graph graph = load_fixture(GetParam());
  const std::string first = serialize_graph(graph);
  auto reparsed = parse_graph(first, "serialized");
  ASSERT_TRUE(reparsed.ok()) << reparsed.error().message << "\n" << first;
  EXPECT_EQ(*reparsed, graph);
  EXPECT_EQ(serialize_graph(*reparsed), first);
}

TEST_P(GraphRoundTrip, SaveAndLoad) {
  const Graph graph = load_fixture(GetParam());
  const auto dir = std::filesystem::path(::testing::TempDir()) / "graph_round_trip";
  const std::string path = (dir / GetParam()).string();
  ASSERT_TRUE(save_graph(graph, path).ok());
  auto loaded = load_graph(path);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(*loaded, graph);
  auto text = read_file(path);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, serialize_graph(graph));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GraphRoundTrip,
                         ::testing::Values("mlp.json", "random_input.json", "lstm.json",
                                           "opaque.json", "captured_66_matmul_dropout_softmax.json",
                                           "captured_73_conv2d_batchnorm_scaling.json",
                                           "captured_bn_running_stats.json"));

// graph.json state_updates (tests/tasks/bn_running_stats.py, captured by the harness): the
// buffers' new values follow the user outputs, their names in state_params.
TEST(GraphJson, StateUpdatesLoadAsOutputsAfterTheUserOutputs) {
  const Graph graph = load_fixture("captured_bn_running_stats.json");
  ASSERT_EQ(graph.outputs.size(), 7u);
  EXPECT_EQ(graph.user_output_count(), 1u);
  EXPECT_EQ(graph.state_params,
            (std::vector<std::string>{"bn2d.running_mean", "bn2d.running_var",
                                      "bn2d.num_batches_tracked", "bn1d.running_mean",
                                      "bn1d.running_var", "bn1d.num_batches_tracked"}));
  EXPECT_EQ(graph.name_of(graph.outputs[2]), "_native_batch_norm_legit_functional.4");
  EXPECT_EQ(graph.type_of(graph.outputs[3]).dtype, DType::int64);
}

TEST(GraphJson, StateUpdateOfANonBufferOrWithAnotherTypeIsRejected) {
  Graph graph = load_fixture("captured_bn_running_stats.json");
  Graph not_buffer = graph;
  not_buffer.state_params[0] = "bn2d.weight";
  EXPECT_FALSE(verify(not_buffer).ok());
  Graph wrong_type = graph;
  std::swap(wrong_type.outputs[1], wrong_type.outputs[3]);  // int64 counter for a float buffer
  auto status = verify(wrong_type);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("state_updates[0]"), std::string::npos);
}

// Files written by the Python harness itself (python/stitch_harness/capture.py), kept verbatim so
// that a change on either side of the format shows up here.
TEST(GraphJson, LoadsHarnessCaptures) {
  const Graph dropout = load_fixture("captured_66_matmul_dropout_softmax.json");
  ASSERT_EQ(dropout.inputs.size(), 2u);
  EXPECT_EQ(dropout.inputs[1].kind, InputKind::random);
  EXPECT_EQ(dropout.inputs[1].type.dtype, DType::boolean);
  EXPECT_EQ(dropout.nodes.back().op, Op::softmax);

  const Graph conv_bn = load_fixture("captured_73_conv2d_batchnorm_scaling.json");
  ASSERT_EQ(conv_bn.nodes.size(), 3u);
  EXPECT_EQ(conv_bn.nodes[0].op, Op::convolution);
  EXPECT_EQ(conv_bn.nodes[1].op, Op::batch_norm_functional);
  EXPECT_EQ(conv_bn.nodes[1].outputs.size(), 5u);
  EXPECT_EQ(conv_bn.params.size(), 7u);
}

TEST(GraphJson, SerializationKeepsFloatKindAndSpecialValues) {
  Graph graph = testing::tiny_graph();
  graph.nodes[0].kwargs = {
      {"one", Arg{1.0}},
      {"int", Arg{int64_t{1}}},
      {"tiny", Arg{1e-300}},
      {"big", Arg{1.5e300}},
      {"neg_zero", Arg{-0.0}},
      {"third", Arg{1.0 / 3.0}},
      {"inf", Arg{INFINITY}},
      {"ninf", Arg{-INFINITY}},
      {"nan", Arg{NAN}},
      {"min", Arg{int64_t{INT64_MIN}}},
      {"text", Arg{std::string("quote\" and \\ and \n")}},
  };
  const std::string text = serialize_graph(graph);
  EXPECT_NE(text.find("\"one\": 1.0"), std::string::npos) << text;
  EXPECT_NE(text.find("\"int\": 1,"), std::string::npos) << text;
  EXPECT_NE(text.find("\"neg_zero\": -0.0"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("inf": {"float": "inf"})"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("nan": {"float": "nan"})"), std::string::npos) << text;
  auto reparsed = parse_graph(text);
  ASSERT_TRUE(reparsed.ok()) << reparsed.error().message;
  EXPECT_EQ(*reparsed, graph);
  EXPECT_EQ(serialize_graph(*reparsed), text);
}

TEST(GraphJson, LoadMissingFileNamesThePath) {
  auto graph = load_graph("/nonexistent/graph.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_NE(graph.error().message.find("/nonexistent/graph.json"), std::string::npos);
}

}  // namespace
}  // namespace stitch::ir
