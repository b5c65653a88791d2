// Malformed graph.json: each case must fail with an error naming the source, the place (node id or
// index, field) and the problem, and never crash.
#include <gtest/gtest.h>

#include "ir/ir.h"
#include "test_graphs.h"
#include "util/fs.h"

namespace stitch::ir {
namespace {

// A valid graph with placeholders: NODES is replaced by the node list, OUTPUTS by the outputs.
constexpr std::string_view kTemplate = R"({
  "format": "stitchcuda.graph", "version": 1, "torch_version": "2.11.0", "training": true,
  "inputs": [{"name": "x", "kind": "user", "shape": [2, 3], "dtype": "float32", "strides": [3, 1]}],
  "params": [{"name": "w", "kind": "parameter", "shape": [3], "dtype": "float32", "strides": [1]}],
  "nodes": [NODES],
  "outputs": [OUTPUTS]
})";

std::string make_graph_text(std::string_view nodes, std::string_view outputs = R"({"node": "a"})") {
  std::string text(kTemplate);
  text.replace(text.find("NODES"), 5, nodes);
  text.replace(text.find("OUTPUTS"), 7, outputs);
  return text;
}

constexpr std::string_view kNodeA =
    R"({"id": "a", "op": "aten.relu.default", "args": [{"input": 0}], "kwargs": {},
        "outputs": [{"shape": [2, 3], "dtype": "float32", "strides": [3, 1]}]})";

// The error message of parsing `text`; fails the test if parsing succeeds.
std::string parse_error(std::string_view text) {
  auto graph = parse_graph(text, "bad.json");
  EXPECT_FALSE(graph.ok()) << "parsed without error:\n" << text;
  if (graph.ok()) return "";
  EXPECT_TRUE(graph.error().message.starts_with("bad.json: ")) << graph.error().message;
  return graph.error().message;
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

TEST(GraphErrors, TemplateIsValid) {
  auto graph = parse_graph(make_graph_text(kNodeA));
  ASSERT_TRUE(graph.ok()) << graph.error().message;
}

TEST(GraphErrors, DanglingReference) {
  const std::string message = parse_error(make_graph_text(
      R"({"id": "a", "op": "aten.relu.default", "args": [{"node": "ghost"}], "outputs": []})"));
  EXPECT_CONTAINS(message, "nodes[0] (id 'a')");
  EXPECT_CONTAINS(message, "args[0]");
  EXPECT_CONTAINS(message, "unknown node 'ghost'");
}

TEST(GraphErrors, ForwardReference) {
  const std::string nodes = R"({"id": "a", "op": "aten.relu.default", "args": [{"node": "b"}],
                                "outputs": [{"shape": [2, 3], "dtype": "float32"}]},
                               {"id": "b", "op": "aten.relu.default", "args": [{"input": 0}],
                                "outputs": [{"shape": [2, 3], "dtype": "float32"}]})";
  const std::string message = parse_error(make_graph_text(nodes));
  EXPECT_CONTAINS(message, "nodes[0] (id 'a')");
  EXPECT_CONTAINS(message, "topological order");
}

TEST(GraphErrors, SelfReference) {
  const std::string message = parse_error(make_graph_text(
      R"({"id": "a", "op": "aten.relu.default", "args": [{"node": "a"}],
          "outputs": [{"shape": [2, 3], "dtype": "float32"}]})"));
  EXPECT_CONTAINS(message, "topological order");
}

TEST(GraphErrors, DuplicateId) {
  const std::string message =
      parse_error(make_graph_text(std::string(kNodeA) + ", " + std::string(kNodeA)));
  EXPECT_CONTAINS(message, "nodes[1] (id 'a')");
  EXPECT_CONTAINS(message, "duplicate node id");
}

TEST(GraphErrors, OutputIndexOutOfRange) {
  const std::string message = parse_error(
      make_graph_text(std::string(kNodeA) +
                      R"(, {"id": "b", "op": "aten.relu.default", "args": [{"node": "a", "out": 1}],
                                  "outputs": [{"shape": [2, 3], "dtype": "float32"}]})"));
  EXPECT_CONTAINS(message, "nodes[1] (id 'b')");
  EXPECT_CONTAINS(message, "output 1 of node 'a', which has 1 output(s)");
}

TEST(GraphErrors, BadDtype) {
  const std::string message = parse_error(make_graph_text(
      R"({"id": "a", "op": "aten.relu.default", "args": [{"input": 0}],
          "outputs": [{"shape": [2, 3], "dtype": "float128"}]})"));
  EXPECT_CONTAINS(message, "nodes[0] (id 'a'): outputs[0]: dtype");
  EXPECT_CONTAINS(message, "unknown dtype 'float128'");
  const std::string in_arg = parse_error(make_graph_text(
      R"({"id": "a", "op": "aten._to_copy.default", "args": [{"input": 0}], "kwargs": {"dtype": {"dtype": "complex32"}},
          "outputs": [{"shape": [2, 3], "dtype": "float32"}]})"));
  EXPECT_CONTAINS(in_arg, "kwargs['dtype']");
  EXPECT_CONTAINS(in_arg, "unknown dtype 'complex32'");
}

TEST(GraphErrors, WrongTypes) {
  EXPECT_CONTAINS(
      parse_error(make_graph_text(R"({"id": 7, "op": "aten.relu.default", "outputs": []})")),
      "nodes[0]: id: expected a string, got integer");
  EXPECT_CONTAINS(
      parse_error(make_graph_text(
          R"({"id": "a", "op": "aten.relu.default", "args": {"x": 1}, "outputs": []})")),
      "nodes[0] (id 'a'): args: expected an array, got object");
  EXPECT_CONTAINS(parse_error(make_graph_text(
                      R"({"id": "a", "op": "aten.relu.default", "args": [],
                          "outputs": [{"shape": [2, "3"], "dtype": "float32"}]})")),
                  "outputs[0]: shape[1]: expected an integer, got string");
  EXPECT_CONTAINS(
      parse_error(make_graph_text(
          R"({"id": "a", "op": "aten.relu.default", "args": [2.5e400], "outputs": []})")),
      "number overflow parsing '2.5e400'");
  EXPECT_CONTAINS(
      parse_error(make_graph_text(
          R"({"id": "a", "op": "aten.relu.default", "args": [99999999999999999999], "outputs": []})")),
      "does not fit in 64 bits");
  EXPECT_CONTAINS(
      parse_error(make_graph_text(
          R"({"id": "a", "op": "aten.relu.default", "args": [18446744073709551615], "outputs": []})")),
      "does not fit in int64");
  EXPECT_CONTAINS(
      parse_error(make_graph_text(
          R"({"id": "a", "op": "aten.relu.default", "args": [{"float": "huge"}], "outputs": []})")),
      "args[0]: float");
  EXPECT_CONTAINS(
      parse_error(make_graph_text(
          R"({"id": "a", "op": "aten.relu.default", "args": [{"tensor": 1}], "outputs": []})")),
      "unknown argument object with keys [tensor]");
  EXPECT_CONTAINS(parse_error(make_graph_text(kNodeA, R"("a")")),
                  "outputs[0]: expected a value reference");
  EXPECT_CONTAINS(parse_error(R"([1, 2])"), "top level: expected an object, got array");
  EXPECT_CONTAINS(
      parse_error(R"({"format": "stitchcuda.graph", "version": 1, "inputs": {}, "params": [],
                                  "nodes": [], "outputs": []})"),
      "inputs: expected an array, got object");
  EXPECT_CONTAINS(
      parse_error(R"({"format": "stitchcuda.graph", "version": 1, "inputs": [], "params": [],
                                  "outputs": []})"),
      "missing field 'nodes'");
}

TEST(GraphErrors, BadReferences) {
  EXPECT_CONTAINS(
      parse_error(make_graph_text(
          R"({"id": "a", "op": "aten.relu.default", "args": [{"input": 3}], "outputs": []})")),
      "refers to input 3, but the graph has 1 inputs");
  EXPECT_CONTAINS(
      parse_error(make_graph_text(
          R"({"id": "a", "op": "aten.relu.default", "args": [{"param": "nope"}], "outputs": []})")),
      "unknown param 'nope'");
  EXPECT_CONTAINS(
      parse_error(make_graph_text(
          R"({"id": "a", "op": "aten.relu.default", "args": [[1, {"node": "zzz"}]], "outputs": []})")),
      "args[0][1]: refers to unknown node 'zzz'");
  EXPECT_CONTAINS(parse_error(make_graph_text(kNodeA, R"({"node": "a", "out": -1})")),
                  "outputs[0]: refers to output -1 of node 'a'");
}

TEST(GraphErrors, StructuralProblemsFoundByVerify) {
  EXPECT_CONTAINS(parse_error(make_graph_text(
                      R"({"id": "a", "op": "aten.relu.default", "args": [{"input": 0}],
                          "outputs": [{"shape": [2, 3], "dtype": "float32", "strides": [1]}]})")),
                  "node #0 'a': outputs[0]: shape has rank 2 but strides has rank 1");
  EXPECT_CONTAINS(parse_error(make_graph_text(
                      R"({"id": "a", "op": "aten.relu.default", "args": [{"input": 0}],
                          "outputs": [{"shape": [2, -3], "dtype": "float32", "strides": [3, 1]}]})")),
                  "shape[1] is negative");
}

TEST(GraphErrors, TruncatedJson) {
  const std::string text = make_graph_text(kNodeA);
  for (size_t cut : {size_t{0}, size_t{1}, text.size() / 2, text.size() - 2}) {
    const std::string message = parse_error(text.substr(0, cut));
    EXPECT_CONTAINS(message, "invalid JSON at byte");
  }
}

TEST(GraphErrors, FormatAndVersion) {
  EXPECT_CONTAINS(parse_error(R"({"format": "other", "version": 1})"),
                  "format: expected \"stitchcuda.graph\"");
  EXPECT_CONTAINS(parse_error(R"({"format": "stitchcuda.graph", "version": 2})"),
                  "unsupported version 2");
  EXPECT_CONTAINS(parse_error(R"({"format": "stitchcuda.graph", "version": 1.0})"),
                  "version: expected an integer, got float");
}

TEST(GraphErrors, DuplicateJsonKeysAndDeepNesting) {
  EXPECT_CONTAINS(parse_error(R"({"format": "stitchcuda.graph", "format": "stitchcuda.graph"})"),
                  "duplicate key 'format'");
  std::string deep =
      make_graph_text(R"({"id": "a", "op": "aten.relu.default", "args": [DEEP], "outputs": []})");
  deep.replace(deep.find("DEEP"), 4, std::string(500, '[') + std::string(500, ']'));
  EXPECT_CONTAINS(parse_error(deep), "nested deeper than");
}

TEST(GraphErrors, LoadGraphNamesTheFile) {
  const auto path = std::string(::testing::TempDir()) + "/broken_graph.json";
  ASSERT_TRUE(write_file_atomic(path, make_graph_text(R"({"id": "a", "op": 3})")).ok());
  auto graph = load_graph(path);
  ASSERT_FALSE(graph.ok());
  EXPECT_CONTAINS(graph.error().message, path);
  EXPECT_CONTAINS(graph.error().message, "nodes[0] (id 'a'): op: expected a string, got integer");
}

}  // namespace
}  // namespace stitch::ir
