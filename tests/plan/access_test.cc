// Access arithmetic (access.h): torch's view/expand/slice rules on hand-computed cases.
#include <gtest/gtest.h>

#include "plan/access.h"

namespace stitch::plan {
namespace {

const ir::ValueRef kBase{ir::ValueRef::Kind::input, 0, 0};

Access make(std::vector<int64_t> shape, std::vector<int64_t> strides, int64_t offset = 0) {
  return Access{kBase, offset, std::move(shape), std::move(strides)};
}

TEST(Access, ContiguousAndFootprint) {
  EXPECT_TRUE(contiguous_access(kBase, {2, 3, 4}).is_contiguous());
  EXPECT_FALSE(make({3, 2}, {1, 3}).is_contiguous());
  EXPECT_TRUE(make({3, 1}, {1, 7}).is_contiguous());  // size-1 dims have any stride
  EXPECT_EQ(access_footprint(make({4, 8}, {0, 1})), 8);
  EXPECT_EQ(access_numel(make({4, 8}, {0, 1})), 32);
  EXPECT_TRUE(is_full_contiguous(contiguous_access(kBase, {4, 8}), 32));
  EXPECT_FALSE(is_full_contiguous(make({4, 8}, {8, 1}, 8), 32));
}

// A cat's piece along the channels: each image contiguous, images a whole larger image apart.
TEST(Access, DensePerImageTakesWindowsOfWholeChannels) {
  EXPECT_TRUE(is_dense_per_image(contiguous_access(kBase, {2, 3, 4, 4})));
  EXPECT_TRUE(is_dense_per_image(make({2, 3, 4, 4}, {80, 16, 4, 1}, 32)));  // channels 2..4 of 5
  EXPECT_TRUE(is_dense_per_image(make({1, 3, 4, 4}, {7, 16, 4, 1})));       // one image
  EXPECT_FALSE(is_dense_per_image(make({2, 3, 4, 4}, {40, 16, 4, 1})));     // images overlap
  EXPECT_FALSE(is_dense_per_image(make({2, 3, 4, 4}, {80, 1, 12, 3})));     // channels-last
  EXPECT_FALSE(is_dense_per_image(make({2, 3, 4, 4}, {96, 32, 8, 2})));     // strided inside
  EXPECT_FALSE(is_dense_per_image(make({}, {})));
}

TEST(Access, ReshapeMergesAndSplitsContiguousDims) {
  auto merged = reshape_access(contiguous_access(kBase, {2, 3, 4}), {6, 4});
  ASSERT_TRUE(merged);
  EXPECT_EQ(merged->strides, (std::vector<int64_t>{4, 1}));
  auto split = reshape_access(make({6, 4}, {8, 1}, 3), {2, 3, 4});  // row-padded rows
  ASSERT_TRUE(split);
  EXPECT_EQ(split->strides, (std::vector<int64_t>{24, 8, 1}));
  EXPECT_EQ(split->offset, 3);
}

TEST(Access, ReshapeOfTransposedFails) {
  const Access transposed = make({4, 3}, {1, 4});
  EXPECT_FALSE(reshape_access(transposed, {12}));
  // Splitting a dim of a transposed tensor is still a view.
  auto split = reshape_access(transposed, {2, 2, 3});
  ASSERT_TRUE(split);
  EXPECT_EQ(split->strides, (std::vector<int64_t>{2, 1, 4}));
}

// nn.MultiheadAttention's q: a [96, 4, 128] slice (rows of 384, from +128) of a [96, 4, 384]
// buffer, copied contiguous, read as [batch 4, heads 8, queries 96, head_dim 16].
TEST(Access, ThroughCopyMapsEachDimOntoTheSourceDimItStepsIn) {
  const ir::ValueRef copy{ir::ValueRef::Kind::node, 3, 0};
  const Access source = make({96, 4, 128}, {1536, 384, 1}, 128);
  const Access heads{copy, 0, {4, 8, 96, 16}, {128, 16, 512, 1}};
  auto read = through_copy_access(heads, source);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->base, kBase);
  EXPECT_EQ(read->offset, 128);
  EXPECT_EQ(read->shape, (std::vector<int64_t>{4, 8, 96, 16}));
  EXPECT_EQ(read->strides, (std::vector<int64_t>{384, 16, 1536, 1}));
  // A window starting inside the copy: its start maps too (query 2, batch 1, column 32).
  const Access window{copy, 2 * 512 + 128 + 32, {2, 16}, {512, 1}};
  auto inner = through_copy_access(window, source);
  ASSERT_TRUE(inner);
  EXPECT_EQ(inner->offset, 128 + 2 * 1536 + 384 + 32);
  EXPECT_EQ(inner->strides, (std::vector<int64_t>{1536, 1}));
}

TEST(Access, ThroughCopyRefusesADimCrossingSourceDims) {
  const ir::ValueRef copy{ir::ValueRef::Kind::node, 3, 0};
  const Access source = make({96, 4, 128}, {1536, 384, 1});
  // 32 heads of 16 over [4, 128]: one stride cannot step over batch and head together.
  EXPECT_FALSE(through_copy_access(Access{copy, 0, {32, 96, 16}, {16, 512, 1}}, source));
  // Reaching past a dim's end (17 columns from 112) or a stride that is no multiple.
  EXPECT_FALSE(through_copy_access(Access{copy, 112, {17}, {1}}, source));
  EXPECT_FALSE(through_copy_access(Access{copy, 0, {2, 4}, {192, 1}}, source));
  EXPECT_FALSE(through_copy_access(Access{copy, 0, {2}, {-1}}, source));
}

TEST(Access, ReshapeHandlesSizeOneDimsAndScalars) {
  auto added = reshape_access(make({4, 256}, {256, 1}), {1, 4, 1, 256});
  ASSERT_TRUE(added);
  EXPECT_EQ(added->shape, (std::vector<int64_t>{1, 4, 1, 256}));
  auto scalar = reshape_access(make({}, {}), {1, 1});
  ASSERT_TRUE(scalar);
  EXPECT_FALSE(reshape_access(make({4}, {1}), {5}));
}

TEST(Access, BroadcastRightAligned) {
  auto full = broadcast_access(make({3, 1}, {1, 1}), {2, 3, 4});
  ASSERT_TRUE(full);
  EXPECT_EQ(full->strides, (std::vector<int64_t>{0, 1, 0}));
  EXPECT_FALSE(broadcast_access(make({3}, {1}), {3, 4}));
}

TEST(Access, PermuteSliceSelectSqueeze) {
  const Access x = contiguous_access(kBase, {2, 3, 4});
  EXPECT_EQ(permute_access(x, {2, 0, 1}).strides, (std::vector<int64_t>{1, 12, 4}));
  const Access sliced = slice_access(x, 2, 1, 100, 2);  // end clamps to 4
  EXPECT_EQ(sliced.shape, (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(sliced.strides, (std::vector<int64_t>{12, 4, 2}));
  EXPECT_EQ(sliced.offset, 1);
  const Access negative = slice_access(x, 1, -2, INT64_MAX, 1);
  EXPECT_EQ(negative.shape[1], 2);
  EXPECT_EQ(negative.offset, 4);
  const Access selected = select_access(x, 1, -1);
  EXPECT_EQ(selected.shape, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(selected.offset, 8);
  EXPECT_EQ(squeeze_access(make({2, 1, 4}, {4, 4, 1}), {0, 1}).shape,
            (std::vector<int64_t>{2, 4}));  // dim 0 is not size 1: kept
  EXPECT_EQ(unsqueeze_access(x, 3).shape, (std::vector<int64_t>{2, 3, 4, 1}));
}

TEST(Access, Unfold) {
  auto windows = unfold_access(contiguous_access(kBase, {10}), 0, 4, 2);
  ASSERT_TRUE(windows);
  EXPECT_EQ(windows->shape, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(windows->strides, (std::vector<int64_t>{2, 1}));
  EXPECT_FALSE(unfold_access(contiguous_access(kBase, {3}), 0, 4, 1));
}

TEST(Access, FlipNegatesStridesFromTheLastElement) {
  // x[4, 5] flipped over dim 1: element (i, j) is x[i, 4 - j] = 4 + 5i - j.
  const Access flipped = flip_access(contiguous_access(kBase, {4, 5}), {1});
  EXPECT_EQ(flipped.offset, 4);
  EXPECT_EQ(flipped.strides, (std::vector<int64_t>{5, -1}));
  EXPECT_FALSE(flipped.is_contiguous());
  // Flipping both dims: (i, j) is x[3 - i, 4 - j] = 19 - 5i - j.
  const Access both = flip_access(contiguous_access(kBase, {4, 5}), {0, 1});
  EXPECT_EQ(both.offset, 19);
  EXPECT_EQ(both.strides, (std::vector<int64_t>{-5, -1}));
  // Twice is the identity; a size-1 dim keeps its stride.
  EXPECT_EQ(flip_access(flipped, {1}), contiguous_access(kBase, {4, 5}));
  EXPECT_EQ(flip_access(contiguous_access(kBase, {1, 5}), {0}), contiguous_access(kBase, {1, 5}));
  // A flipped row reshapes along itself (the dims still merge) but not into a transposed order.
  auto rows = reshape_access(flip_access(contiguous_access(kBase, {2, 3, 4}), {0, 1, 2}), {24});
  ASSERT_TRUE(rows);
  EXPECT_EQ(rows->offset, 23);
  EXPECT_EQ(rows->strides, (std::vector<int64_t>{-1}));
}

TEST(Access, WrapDim) {
  EXPECT_EQ(wrap_dim(-1, 3), 2);
  EXPECT_FALSE(wrap_dim(3, 3));
  EXPECT_EQ(wrap_dim(-1, 0), 0);
}

}  // namespace
}  // namespace stitch::plan
