// The node table and the graph summary (print.h).
#include <gtest/gtest.h>

#include "ir/print.h"
#include "test_graphs.h"

namespace stitch::ir {
namespace {

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

TEST(Print, NodeTableOfMlp) {
  auto graph = load_graph(testing::fixture_path("mlp.json"));
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  const std::string table = format_node_table(*graph);
  // Header, 5 nodes, totals.
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 7) << table;
  EXPECT_CONTAINS(table, "addmm_1");
  EXPECT_CONTAINS(table, "[8, 32] float32");
  EXPECT_CONTAINS(table, "network.2");
  // addmm: 2*8*32*16 + 8*32 = 8448 flops.
  EXPECT_CONTAINS(table, "8.45 k");
  EXPECT_CONTAINS(table, "total: 5 nodes");
}

TEST(Print, OpaqueAndMultiOutputNodes) {
  auto graph = load_graph(testing::fixture_path("opaque.json"));
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  const std::string table = format_node_table(*graph);
  EXPECT_CONTAINS(table, "special_bessel_j0 (opaque)");
  EXPECT_CONTAINS(table, "[16, 16] float32 (+1)");
  EXPECT_CONTAINS(table, "not estimated");
  const std::string summary = format_graph_summary(*graph);
  EXPECT_CONTAINS(summary,
                  "opaque ops: aten.linalg_qr.default x1, aten.special_bessel_j0.default x1");
}

TEST(Print, Summary) {
  auto graph = load_graph(testing::fixture_path("lstm.json"));
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  const std::string summary = format_graph_summary(*graph);
  EXPECT_CONTAINS(summary, "task 35_LSTM (35_LSTM.py), torch 2.11.0, training mode");
  EXPECT_CONTAINS(summary,
                  "input 1 h0: [1, 2, 4] float32 (random, from aten.randn.default) ~ randn");
  EXPECT_CONTAINS(summary, "params: 6 tensors");
  EXPECT_CONTAINS(summary, "1 recurrent");
  EXPECT_CONTAINS(summary, "output 1: lstm.2 [1, 2, 4] float32");
}

TEST(Print, Units) {
  EXPECT_EQ(format_count(999), "999");
  EXPECT_EQ(format_count(1234567), "1.23 M");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(3.0 * (1 << 30)), "3.00 GiB");
}

}  // namespace
}  // namespace stitch::ir
