// The host-checkable half of the implicit-GEMM convolution (kernels/conv_igemm_common.cuh and the
// two kernels' gathers), without a GPU (label unit): each kernel's own gather code
// (gather_conv_columns with its thread placement, run here with a recording sink for every thread
// of a block) must give every A tile element exactly once, equal to a direct im2col of the input
// (zero for padding and past K) — the wgmma producer's over split K ranges with its carried
// cursor; the wgmma gather's writes must be free of bank conflicts; conv_output_offset must place
// every GEMM element on its own output element; the wgmma kernel's im2col TMA load
// (kernels/conv_igemm_im2col_tma.cuh: its map's fields, where it applies, and every load of a
// shape, emulated as that header reads the PTX ISA, bringing the chunked gather's tile); plus the
// shape checks and the launchers' argument checks. Every shape of the GPU test's tables
// (conv_igemm_cases.cuh).
#include <algorithm>
#include <cstdint>
#include <utility>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conv_igemm_cases.cuh"
#include "conv_im2col_tma_emulation.cuh"
#include "kernel_test_support.cuh"
#include "kernels/conv_igemm_tf32x3.cuh"

namespace stitch::kernels {
namespace {

// Why conv_igemm_box_tma_worth refuses a shape.
std::string box_refusal(const ConvIgemmShape& s) {
  const std::string bad = conv_igemm_box_tma_problem(s);
  return bad.empty() ? "its channels would pad to 32 by more than a third" : bad;
}

using testing::ConvIgemmCase;

// A[m, k] of group `group` by the definition: the input under output position m's window tap k.
float im2col(const ConvIgemmShape& s, const std::vector<float>& x, int group, int64_t m,
             int64_t k) {
  const detail::ConvIgemmDims d = detail::conv_igemm_dims(s);
  const int64_t channels = s.in_channels / s.groups;
  const int64_t volume = d.kernel[0] * d.kernel[1] * d.kernel[2];
  const int64_t plane = d.output[0] * d.output[1] * d.output[2];
  if (m >= s.batch * plane || k >= channels * volume) return 0.0f;
  const int64_t image = m / plane, o = m % plane, c = k / volume, tap = k % volume;
  const int64_t out[3] = {o / (d.output[1] * d.output[2]), o / d.output[2] % d.output[1],
                          o % d.output[2]};
  const int64_t kernel[3] = {tap / (d.kernel[1] * d.kernel[2]), tap / d.kernel[2] % d.kernel[1],
                             tap % d.kernel[2]};
  int64_t at = image * s.in_channels + group * channels + c;
  for (int i = 0; i < 3; ++i) {
    const int64_t in = out[i] * d.stride[i] - d.pad[i] + kernel[i] * d.dilation[i];
    if (in < 0 || in >= d.input[i]) return 0.0f;
    at = at * d.input[i] + in;
  }
  return x[at];
}

class ConvIgemmGather : public ::testing::TestWithParam<ConvIgemmCase> {};

constexpr int kTileRows = detail::kGemmBM, kTileColumns = detail::kGemmBK;

// One A tile as the threads' sinks filled it, against a direct im2col: every element written
// once, with the input element under its window (zero for padding and past K). Counts mismatches
// (the first five reported).
struct GatheredTile {
  std::vector<float> values = std::vector<float>(kTileRows * kTileColumns, -1.0f);
  std::vector<int> writes = std::vector<int>(kTileRows * kTileColumns, 0);

  void record(int r, int c, const float* src, bool ok) {
    ASSERT_TRUE(r >= 0 && r < kTileRows && c >= 0 && c < kTileColumns);
    ++writes[r * kTileColumns + c];
    values[r * kTileColumns + c] = ok ? *src : 0.0f;
  }
  void expect_im2col(const ConvIgemmShape& s, const std::vector<float>& x, int group, int tm,
                     int k0, int& mismatches) const {
    for (int r = 0; r < kTileRows; ++r)
      for (int c = 0; c < kTileColumns; ++c) {
        const float want = im2col(s, x, group, int64_t{tm} * kTileRows + r, k0 + c);
        const int at = r * kTileColumns + c;
        if ((writes[at] != 1 || values[at] != want) && mismatches++ < 5)
          ADD_FAILURE() << "group " << group << " m " << tm * kTileRows + r << " k " << k0 + c
                        << ": written " << writes[at] << "x, got " << values[at] << ", want "
                        << want;
      }
  }
};

std::vector<float> numbered_input(const ConvIgemmShape& s) {
  std::vector<float> x(testing::conv_input_elements(s));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i + 1);  // distinct and exact: a wrong address shows
  return x;
}

// x (NCDHW) transposed to NDHWC, padded with zero channels to conv_igemm_gather_channels per
// group: the layout the channels-last gathers read.
std::vector<float> channels_last_input(const ConvIgemmShape& s, const std::vector<float>& x) {
  const detail::ConvIgemmDims d = detail::conv_igemm_dims(s);
  const int64_t positions = d.input[0] * d.input[1] * d.input[2];
  const int64_t padded = detail::conv_igemm_gather_channels(s) * s.groups;
  std::vector<float> x_last(static_cast<size_t>(s.batch * positions * padded), 0.0f);
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t c = 0; c < s.in_channels; ++c)
      for (int64_t q = 0; q < positions; ++q)
        x_last[(n * positions + q) * padded + c] = x[(n * s.in_channels + c) * positions + q];
  return x_last;
}

// The mma.sync kernel's gather: 256 threads, rows r and r + 64, the cursor started per tile.
TEST_P(ConvIgemmGather, MmaSyncTilesAreTheIm2colTiles) {
  const ConvIgemmShape& s = GetParam().shape;
  ASSERT_EQ(conv_igemm_shape_problem(s), "");
  const std::vector<float> x = numbered_input(s);
  const detail::ConvIgemmParams p =
      detail::conv_igemm_params(x.data(), x.data(), nullptr, nullptr, s, MatmulEpilogue::none);
  int mismatches = 0;
  for (int group = 0; group < s.groups; ++group)
    for (int tm = 0; tm < p.tiles_m; ++tm)
      for (int k0 = 0; k0 < p.k; k0 += kTileColumns) {
        GatheredTile tile;
        for (int thread = 0; thread < detail::kGemmThreads; ++thread) {
          const int warp = thread / 32, lane = thread % 32;
          const int row = warp * 8 + (lane & 7), column = lane >> 3;  // as the kernel assigns
          detail::ConvIgemmRow rows[2];
          rows[0].start(p, tm * kTileRows + row, group);
          rows[1].start(p, tm * kTileRows + row + 64, group);
          detail::ConvKCursor cursor;
          cursor.start(p, k0 + column);
          detail::gather_conv_columns<2, 64, 8>(
              p, rows, row, column, cursor,
              [&](int r, int c, const float* src, bool ok) { tile.record(r, c, src, ok); });
        }
        tile.expect_im2col(s, x, group, tm, k0, mismatches);
      }
  EXPECT_EQ(mismatches, 0);
}

// The wgmma kernel's producer gather: 128 threads placed by conv_wgmma_gather_slot, four rows
// each, one cursor per thread carried from tile to tile over a split's K range (here every range
// of a two-way split at a multiple of 32, and the whole K).
TEST_P(ConvIgemmGather, WgmmaTilesAreTheIm2colTilesOverEachKRange) {
  const ConvIgemmShape& s = GetParam().shape;
  ASSERT_EQ(conv_igemm_shape_problem(s), "");
  const std::vector<float> x = numbered_input(s);
  const detail::ConvIgemmParams p =
      detail::conv_igemm_params(x.data(), x.data(), nullptr, nullptr, s, MatmulEpilogue::none);
  const int k_tiles = (p.k + kTileColumns - 1) / kTileColumns;
  const int half = (k_tiles + 1) / 2 * kTileColumns;
  const std::vector<std::pair<int, int>> ranges = {{0, p.k}, {0, std::min(half, p.k)},
                                                   {std::min(half, p.k), p.k}};
  int mismatches = 0;
  for (const auto& [k_begin, k_end] : ranges)
    for (int group = 0; group < s.groups; ++group)
      for (int tm = 0; tm < p.tiles_m; ++tm) {
        std::vector<GatheredTile> tiles((k_end - k_begin + kTileColumns - 1) / kTileColumns);
        for (int ptid = 0; ptid < 128; ++ptid) {
          const detail::ConvWgmmaGatherSlot at = detail::conv_wgmma_gather_slot(ptid);
          detail::ConvIgemmRow rows[detail::kConvWgmmaGatherRows];
          for (int i = 0; i < detail::kConvWgmmaGatherRows; ++i)
            rows[i].start(p, tm * kTileRows + at.row + 32 * i, group);
          detail::ConvKCursor cursor;
          cursor.start(p, k_begin + at.first_column);
          for (GatheredTile& tile : tiles)
            detail::gather_conv_columns<detail::kConvWgmmaGatherRows, 32, 1>(
                p, rows, at.row, at.first_column, cursor,
                [&](int r, int c, const float* src, bool ok) { tile.record(r, c, src, ok); });
        }
        for (size_t t = 0; t < tiles.size(); ++t)
          tiles[t].expect_im2col(s, x, group, tm, k_begin + static_cast<int>(t) * kTileColumns,
                                 mismatches);
      }
  EXPECT_EQ(mismatches, 0);
}

// The wgmma producer's channels-last gather: x transposed to NDHWC (padded with zero channels to
// conv_igemm_gather_channels), K ordered (tap, channel), 16-byte chunks placed by
// conv_wgmma_chunk_slot; every chunk must hold the four im2col elements of its columns (K column
// k' is the NCDHW order's tap_major_source_column, zero for a padding channel).
TEST_P(ConvIgemmGather, ChannelsLastTilesAreTheReorderedIm2colTiles) {
  const ConvIgemmShape& s = GetParam().shape;
  if (!detail::conv_igemm_channels_last_eligible(s))
    GTEST_SKIP() << "channels per group neither a multiple of 4 nor padded to one: the 4-byte "
                    "gather runs it";
  const std::vector<float> x = numbered_input(s);
  const std::vector<float> x_last = channels_last_input(s, x);
  detail::ConvIgemmParams p = detail::conv_igemm_params(x_last.data(), x_last.data(), nullptr,
                                                        nullptr, s, MatmulEpilogue::none);
  const int used_channels = p.channels;
  detail::conv_igemm_channels_last(p, s);
  const int channels = p.channels;
  int mismatches = 0;
  for (int group = 0; group < s.groups; ++group)
    for (int tm = 0; tm < p.tiles_m; ++tm) {
      std::vector<GatheredTile> tiles((p.k + kTileColumns - 1) / kTileColumns);
      for (int ptid = 0; ptid < 128; ++ptid) {
        const detail::ConvWgmmaGatherSlot at = detail::conv_wgmma_chunk_slot(ptid);
        detail::ConvIgemmRow rows[detail::kConvWgmmaGatherRows];
        for (int i = 0; i < detail::kConvWgmmaGatherRows; ++i)
          rows[i].start(p, tm * kTileRows + at.row + 32 * i, group);
        detail::ConvKCursor cursor;
        cursor.start_taps(p, at.first_column);
        for (GatheredTile& tile : tiles)
          detail::gather_conv_chunks<detail::kConvWgmmaGatherRows, 32>(
              p, rows, at.row, at.first_column, cursor,
              [&](int r, int c, const float* src, bool ok) {
                ASSERT_EQ(c % 4, 0);
                for (int e = 0; e < 4; ++e)
                  tile.record(r, c + e, ok ? src + e : nullptr, ok);
              });
      }
      for (size_t t = 0; t < tiles.size(); ++t)
        for (int r = 0; r < kTileRows; ++r)
          for (int c = 0; c < kTileColumns; ++c) {
            const int k = static_cast<int>(t) * kTileColumns + c;
            const int64_t source_k =
                k < p.k ? detail::tap_major_source_column(k, p.k, channels, used_channels) : k;
            const float want =
                source_k < 0 ? 0.0f : im2col(s, x, group, int64_t{tm} * kTileRows + r, source_k);
            const int at = r * kTileColumns + c;
            if ((tiles[t].writes[at] != 1 || tiles[t].values[at] != want) && mismatches++ < 5)
              ADD_FAILURE() << "group " << group << " m " << tm * kTileRows + r << " k " << k
                            << ": written " << tiles[t].writes[at] << "x, got "
                            << tiles[t].values[at] << ", want " << want;
          }
    }
  EXPECT_EQ(mismatches, 0);
}

// The wgmma producer's im2col TMA (kernels/conv_igemm_im2col_tma.cuh) as that header reads the
// PTX ISA (emulated: conv_im2col_tma_emulation.cuh): for every output tile and every K tile of
// each split range, the load at conv_im2col_coords (the kernel's coordinates, the cursor carried
// as the producer carries it) through the map of conv_im2col_map_fields starts inside the
// bounding box, keeps its offsets within the rank's range, and brings exactly the reordered
// im2col tile the chunked gather copies — zero for padding and for rows past M (the walk runs
// into images past the batch).
TEST_P(ConvIgemmGather, Im2colTmaTilesAreTheReorderedIm2colTiles) {
  const ConvIgemmShape& s = GetParam().shape;
  const std::string problem = conv_igemm_tma_im2col_problem(s);
  if (!problem.empty()) GTEST_SKIP() << "no im2col TMA: " << problem;
  const std::vector<float> x = numbered_input(s);
  const std::vector<float> x_last = channels_last_input(s, x);
  detail::ConvIgemmParams p = detail::conv_igemm_params(x_last.data(), x_last.data(), nullptr,
                                                        nullptr, s, MatmulEpilogue::none);
  detail::conv_igemm_channels_last(p, s);
  ASSERT_EQ(p.k % kTileColumns, 0);
  const detail::ConvIm2colMapFields f = detail::conv_im2col_map_fields(s, p.pixel_stride);
  const int half = (p.k / kTileColumns + 1) / 2 * kTileColumns;
  const std::vector<std::pair<int, int>> ranges = {{0, p.k}, {0, half}, {half, p.k}};
  int mismatches = 0;
  for (const auto& [k_begin, k_end] : ranges)
    for (int tm = 0; tm < p.tiles_m; ++tm) {
      const detail::ConvWindowOrigin origin = detail::conv_window_origin(p, tm * kTileRows);
      detail::ConvKCursor cursor;
      cursor.start_taps(p, k_begin);
      for (int k0 = k_begin; k0 < k_end; k0 += kTileColumns) {
        const detail::ConvIm2colCoords coords = detail::conv_im2col_coords(p, origin, cursor);
        const testing::Im2colLoad load = testing::im2col_load(coords);
        bool inside_box = false;
        testing::im2col_walk(f, load, kTileRows, &inside_box);
        ASSERT_TRUE(inside_box) << "tile " << tm << ": the walk starts outside the box";
        for (int i = 0; i < s.spatial; ++i)
          ASSERT_LE(load.offset[i], detail::kIm2colOffsetMax[f.rank - 3]);
        const std::vector<float> tile = testing::emulate_im2col_tma(f, x_last, load);
        for (int r = 0; r < kTileRows; ++r)
          for (int c = 0; c < kTileColumns; ++c) {
            const int64_t m = int64_t{tm} * kTileRows + r;
            const float want = im2col(
                s, x, 0, m,
                detail::tap_major_source_column(k0 + c, p.k, p.channels, p.channels));
            if (tile[r * kTileColumns + c] != want && mismatches++ < 5)
              ADD_FAILURE() << "m " << m << " k " << k0 + c << ": got "
                            << tile[r * kTileColumns + c] << ", want " << want;
          }
        cursor.advance_taps(p, kTileColumns);
      }
    }
  EXPECT_EQ(mismatches, 0);
}

// The TMA boxes of an NCDHW x (conv_igemm_box_tma.cuh), emulated: each K tile's box as a tiled
// load reads it (the box at conv_box_coords, [channel][row][column], zeros outside x), transposed
// as the producers do (tile row r, column c = box element (c, r)), is the im2col tile of the
// positions conv_tile_position gives its rows, K in (tap, channel) order over the channels padded
// to 32 — over the whole K range and split in two.
TEST_P(ConvIgemmGather, BoxTilesAreTheReorderedIm2colTiles) {
  const ConvIgemmShape& s = GetParam().shape;
  if (!conv_igemm_box_tma_worth(s)) GTEST_SKIP() << "no boxes: " << box_refusal(s);
  const std::vector<float> x = numbered_input(s);
  detail::ConvIgemmParams p =
      detail::conv_igemm_params(x.data(), x.data(), nullptr, nullptr, s, MatmulEpilogue::none);
  detail::conv_igemm_box_params(p, s);
  ASSERT_EQ(p.k % kTileColumns, 0);
  const detail::ConvIgemmDims d = detail::conv_igemm_dims(s);
  // x's element (image, channel, depth, row, column), or zero outside x.
  auto x_at = [&](int image, int channel, int dd, int hh, int ww) {
    if (channel >= s.in_channels || dd < 0 || dd >= d.input[0] || hh < 0 || hh >= d.input[1] ||
        ww < 0 || ww >= d.input[2])
      return 0.0f;
    return x[((static_cast<int64_t>(image) * s.in_channels + channel) * d.input[0] + dd) *
                 d.input[1] * d.input[2] +
             int64_t{hh} * d.input[2] + ww];
  };
  const int half = (p.k / kTileColumns + 1) / 2 * kTileColumns;
  const std::vector<std::pair<int, int>> ranges = {{0, p.k}, {0, half}, {half, p.k}};
  int mismatches = 0;
  for (const auto& [k_begin, k_end] : ranges)
    for (int tm = 0; tm < p.tiles_m; ++tm)
      for (int k0 = k_begin; k0 < k_end; k0 += kTileColumns) {
        const detail::ConvBoxCoords box = detail::conv_box_coords(p, tm, k0 / kTileColumns);
        for (int r = 0; r < kTileRows; ++r) {
          const int m = detail::conv_tile_position(p, tm, r);
          if (m < 0) continue;  // computed, never stored
          for (int c = 0; c < kTileColumns; ++c) {
            const float got = x_at(box.image, box.channel + c, box.d, box.h + r / p.box_w,
                                   box.w + r % p.box_w);
            const int64_t source =
                detail::tap_major_source_column(k0 + c, p.k, p.channels, s.in_channels);
            const float want = source < 0 ? 0.0f : im2col(s, x, 0, m, source);  // < 0: padding
            if (got != want && mismatches++ < 5)
              ADD_FAILURE() << "tile " << tm << " row " << r << " (m " << m << ") k " << k0 + c
                            << ": got " << got << ", want " << want;
          }
        }
      }
  EXPECT_EQ(mismatches, 0);
}

// The producers' transpose of a box into the tile: a warp's 16-byte stores of one chunk column
// (lanes = 32 consecutive rows) go out a quarter warp at a time, whose eight rows' chunks lie in
// eight different 16-byte bank groups; its loads (32 consecutive positions of one channel) are
// 32 consecutive words.
TEST(ConvIgemmBoxTma, TransposeStoresAreFreeOfBankConflicts) {
  for (int c = 0; c < kTileColumns / 4; ++c)
    for (int r0 = 0; r0 < kTileRows; r0 += 8) {
      std::vector<int> groups;
      for (int r = r0; r < r0 + 8; ++r)
        groups.push_back(detail::wgmma_a_offset(r, 4 * c) / 4 % 8);
      std::sort(groups.begin(), groups.end());
      EXPECT_EQ(std::unique(groups.begin(), groups.end()) - groups.begin(), 8)
          << "chunk " << c << ", rows " << r0 << "..";
    }
}

// The swizzle places the tile's 4096 elements on distinct words; a producer warp's 32 4-byte
// writes of one pass (one column step) land in 32 different shared-memory banks.
TEST(ConvIgemmWgmmaGather, WritesAreFreeOfBankConflicts) {
  std::vector<int> words(kTileRows * kTileColumns, 0);
  for (int r = 0; r < kTileRows; ++r)
    for (int c = 0; c < kTileColumns; ++c)
      ++words[detail::wgmma_a_offset(r, c)];
  EXPECT_EQ(std::count(words.begin(), words.end(), 1), kTileRows * kTileColumns);
  // Channels-last chunks: each quarter warp's eight 16-byte writes of one instruction land in
  // eight different 16-byte bank groups.
  for (int warp = 0; warp < 4; ++warp)
    for (int i = 0; i < detail::kConvWgmmaGatherRows; ++i)
      for (int half = 0; half < 2; ++half)
        for (int quarter = 0; quarter < 4; ++quarter) {
          std::vector<int> groups(8, 0);
          for (int lane = 8 * quarter; lane < 8 * quarter + 8; ++lane) {
            const detail::ConvWgmmaGatherSlot at = detail::conv_wgmma_chunk_slot(warp * 32 + lane);
            ++groups[detail::wgmma_a_offset(at.row + 32 * i, at.first_column + 4 * half) / 4 % 8];
          }
          EXPECT_EQ(std::count(groups.begin(), groups.end(), 1), 8)
              << "warp " << warp << " row step " << i << " half " << half << " quarter " << quarter;
        }
  for (int warp = 0; warp < 4; ++warp)
    for (int i = 0; i < detail::kConvWgmmaGatherRows; ++i)
      for (int j = 0; j < kTileColumns / detail::kConvIgemmColumnsPerPass; ++j) {
        std::vector<int> banks(32, 0);
        for (int lane = 0; lane < 32; ++lane) {
          const detail::ConvWgmmaGatherSlot at = detail::conv_wgmma_gather_slot(warp * 32 + lane);
          const int row = at.row + 32 * i, column = at.first_column + 4 * j;
          ++banks[detail::wgmma_a_offset(row, column) % 32];
        }
        EXPECT_EQ(std::count(banks.begin(), banks.end(), 1), 32)
            << "warp " << warp << " row step " << i << " pass " << j;
      }
}

TEST_P(ConvIgemmGather, EveryGemmElementHasItsOwnOutputElement) {
  const ConvIgemmShape& s = GetParam().shape;
  const detail::ConvIgemmParams p =
      detail::conv_igemm_params(nullptr, nullptr, nullptr, nullptr, s, MatmulEpilogue::none);
  const int64_t outputs = testing::conv_output_elements(s);
  ASSERT_EQ(int64_t{p.m} * p.n * s.groups, outputs);
  std::vector<int> hits(outputs, 0);
  const int64_t plane = p.out_plane;
  for (int group = 0; group < s.groups; ++group)
    for (int m = 0; m < p.m; ++m)
      for (int co = 0; co < p.n; ++co) {
        const int64_t at = detail::conv_output_offset(p, group, m, co);
        const int64_t want = (m / plane * s.out_channels + group * p.n + co) * plane + m % plane;
        ASSERT_EQ(at, want) << "group " << group << " m " << m << " co " << co;
        ++hits[at];
      }
  for (int64_t i = 0; i < outputs; ++i)
    ASSERT_EQ(hits[i], 1) << i;
}

// A channels-last y (the output map a plan's channels-last value gets, plan/layout.h): GEMM element
// (m, co) lands on [image][position][channel]; where the channels per group are even the wgmma
// epilogue stores two channels at once (conv_igemm_pair_stores), never with an odd count, an
// NCDHW y or a y not 8-byte aligned.
TEST_P(ConvIgemmGather, ChannelsLastOutputMapAddressesNdhwc) {
  const ConvIgemmShape& s = GetParam().shape;
  alignas(8) static float y[2];
  detail::ConvIgemmParams p =
      detail::conv_igemm_params(nullptr, nullptr, nullptr, y, s, MatmulEpilogue::none);
  EXPECT_FALSE(detail::conv_igemm_pair_stores(p));  // NCDHW: channels a plane apart
  const detail::ConvIgemmDims d = detail::conv_igemm_dims(s);
  ConvIgemmOutputMap map;
  map.image_floats = int64_t{p.out_plane} * s.out_channels, map.channel_floats = 1;
  map.step[0] = d.output[1] * d.output[2] * s.out_channels;
  map.step[1] = d.output[2] * s.out_channels;
  map.step[2] = s.out_channels;
  detail::conv_igemm_output_map(p, map);
  for (int group = 0; group < s.groups; ++group)
    for (int m = 0; m < p.m; ++m)
      for (int co = 0; co < p.n; ++co) {
        const int64_t image = m / p.out_plane, position = m % p.out_plane;
        ASSERT_EQ(detail::conv_output_offset(p, group, m, co),
                  (image * p.out_plane + position) * s.out_channels + group * p.n + co);
      }
  EXPECT_EQ(detail::conv_igemm_pair_stores(p), p.n % 2 == 0) << p.n;
  p.y = y + 1;  // 4 bytes past an 8-byte boundary
  EXPECT_FALSE(detail::conv_igemm_pair_stores(p));
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvIgemmGather, ::testing::ValuesIn(testing::conv_igemm_cases()),
                         testing::case_name<ConvIgemmCase>);
INSTANTIATE_TEST_SUITE_P(TmaShapes, ConvIgemmGather,
                         ::testing::ValuesIn(testing::conv_igemm_tma_cases()),
                         testing::case_name<ConvIgemmCase>);
INSTANTIATE_TEST_SUITE_P(BoxShapes, ConvIgemmGather,
                         ::testing::ValuesIn(testing::conv_igemm_box_cases()),
                         testing::case_name<ConvIgemmCase>);

// The wgmma convolution's 64-wide tile (kernels/conv_igemm_tf32x3_wgmma.cuh): taken where the
// output channels per group fit it; the plan then counts 64-wide tile columns, and its split-K
// partial tiles keep the 64 slots per thread the reduction indexes (a narrow tile fills half).
TEST(ConvIgemmWgmmaTile, NarrowForConvolutionsOfAtMost64Channels) {
  EXPECT_EQ(conv_igemm_wgmma_tile_n(16), 64);
  EXPECT_EQ(conv_igemm_wgmma_tile_n(64), 64);
  EXPECT_EQ(conv_igemm_wgmma_tile_n(65), 128);
  EXPECT_EQ(conv_igemm_wgmma_tile_n(512), 128);
  const detail::GemmTf32x3Plan narrow = detail::plan_gemm_tf32x3(1, 8192, 130, 576, 132, 64);
  EXPECT_EQ(narrow.tiles_n, 3);
  EXPECT_EQ(narrow.tiles, 64 * 3);
  const detail::GemmTf32x3Plan few = detail::plan_gemm_tf32x3(1, 64, 128, 4096, 132, 64);
  EXPECT_EQ(few.tiles, 2);  // two 64-wide columns, as two 128-wide ones would be for n = 256
  EXPECT_EQ(few.splits, 8);
  EXPECT_EQ(few.partial_floats(), 2 * 8 * 64 * 256);
  EXPECT_LE(detail::WgmmaTile<64>::kSmemBytes, detail::WgmmaTile<128>::kSmemBytes);
  EXPECT_EQ(detail::WgmmaTile<64>::kAcc, 32);
}

// One product's 256-wide tile (half the L2 traffic of A per product): taken where it pads n no
// more than 128-wide tiles do and its plan would not split K — it runs unsplit, its 128 sums per
// thread past what a split's partial tile holds. Forced, it is planned with one split.
TEST(ConvIgemmWgmmaTile, WidestForOneProductOnManyChannelsUnsplit) {
  using P = Tf32Products;
  EXPECT_EQ(conv_igemm_wgmma_tile_n(512), 128);  // three products: never 256
  EXPECT_EQ(conv_igemm_wgmma_tile_n(128, P::one), 128);
  EXPECT_EQ(conv_igemm_wgmma_tile_n(129, P::one), 256);
  EXPECT_EQ(conv_igemm_wgmma_tile_n(256, P::one), 256);
  EXPECT_EQ(conv_igemm_wgmma_tile_n(384, P::one), 128);  // 512 of 256-wide against 384
  EXPECT_EQ(conv_igemm_wgmma_tile_n(400, P::one), 256);  // 512 either way
  EXPECT_EQ(conv_igemm_wgmma_tile_n(512, P::one), 256);
  EXPECT_EQ(conv_igemm_wgmma_tile_n(64, P::one), 64);
  // VGG16's conv3 at batch 10 (M = 31360, K = 2304): 245 tiles, no split.
  const detail::ConvIgemmWgmmaPlan vgg =
      detail::plan_conv_igemm_wgmma(1, 31360, 256, 2304, 132, 0, P::one);
  EXPECT_EQ(vgg.tile_n, 256);
  EXPECT_EQ(vgg.plan.tiles, 245);
  EXPECT_EQ(vgg.plan.splits, 1);
  // Its conv5 (M = 1960, K = 4608): 32 wide tiles would split K, so 128 with a split.
  const detail::ConvIgemmWgmmaPlan late =
      detail::plan_conv_igemm_wgmma(1, 1960, 512, 4608, 132, 0, P::one);
  EXPECT_EQ(late.tile_n, 128);
  EXPECT_GT(late.plan.splits, 1);
  const detail::ConvIgemmWgmmaPlan forced =
      detail::plan_conv_igemm_wgmma(1, 1960, 512, 4608, 132, 256, P::one);
  EXPECT_EQ(forced.tile_n, 256);
  EXPECT_EQ(forced.plan.tiles, 16 * 2);
  EXPECT_EQ(forced.plan.splits, 1);
  // A short K (3 tiles) never splits, however few the tiles (the planner's conv_igemm_wide_tile).
  EXPECT_EQ(detail::plan_conv_igemm_wgmma(1, 64, 256, 72, 132, 0, P::one).tile_n, 256);
  EXPECT_EQ(detail::WgmmaTile<256>::kAcc, 128);
  EXPECT_LE(detail::WgmmaTile<256>::kSmemBytes, detail::WgmmaTile<128>::kSmemBytes);
  EXPECT_EQ(detail::WgmmaTile<256>::kStageBytes, 48 * 1024);  // A and the big B alone
}

// A requested width the kernel does not have is refused at init, before any device work: 256
// for three products (its stages have no room for the small B copy, its sums none for chunks).
TEST(ConvIgemmWgmmaTile, InitRefusesAWidthItDoesNotHave) {
  const ConvIgemmShape shape = testing::conv_case_shape(1, 32, 256, 1, {8, 8}, {3}, {1}, {1});
  std::string error;
  ConvIgemmTf32x3 three;
  three.set_tile_n(256);
  EXPECT_EQ(three.init(shape, MatmulEpilogue::none, error), STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("256 makes one product only"), std::string::npos) << error;
  ConvIgemmTf32 one;
  one.set_tile_n(96);
  error.clear();
  EXPECT_EQ(one.init(shape, MatmulEpilogue::none, error), STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("64 or 128 wide or 256, not 96"), std::string::npos) << error;
}

// The chunked gather's channels per position: multiples of 4 as they are; one group's count
// rounded up to one where that adds at most a third (an image's 3 channels -> 4); nothing
// otherwise (the 4-byte gather). The parameters then count K over the padded channels, and the
// weight's reorder leaves the padding channels' columns zero.
TEST(ConvIgemmWgmmaGather, PadsFewChannelsToAChunk) {
  auto channels = [](int64_t in_channels, int64_t groups) {
    return detail::conv_igemm_gather_channels(
        testing::conv_case_shape(1, in_channels, 8 * groups, groups, {8, 8}, {3}, {1}, {1}));
  };
  EXPECT_EQ(channels(8, 1), 8);
  EXPECT_EQ(channels(16, 2), 8);
  EXPECT_EQ(channels(3, 1), 4);
  EXPECT_EQ(channels(6, 1), 8);
  EXPECT_EQ(channels(7, 1), 8);
  EXPECT_EQ(channels(9, 1), 12);
  EXPECT_EQ(channels(1, 1), 0);  // 4x the K: the 4-byte gather
  EXPECT_EQ(channels(2, 1), 0);
  EXPECT_EQ(channels(5, 1), 0);
  EXPECT_EQ(channels(6, 2), 0);  // 3 per group: padding would interleave the groups' channels
  const ConvIgemmShape stem = testing::conv_case_shape(2, 3, 64, 1, {64, 64}, {7}, {2}, {3});
  EXPECT_TRUE(detail::conv_igemm_pads_channels(stem));
  EXPECT_FALSE(detail::conv_igemm_pads_channels(
      testing::conv_case_shape(2, 8, 64, 1, {64, 64}, {7}, {2}, {3})));
  detail::ConvIgemmParams p =
      detail::conv_igemm_params(nullptr, nullptr, nullptr, nullptr, stem, MatmulEpilogue::none);
  EXPECT_EQ(p.k, 3 * 49);
  detail::conv_igemm_channels_last(p, stem);
  EXPECT_EQ(p.channels, 4);
  EXPECT_EQ(p.k, 4 * 49);
  EXPECT_EQ(p.pixel_stride, 4);
  EXPECT_EQ(p.x_image, 4 * 64 * 64);
  // K column (tap, channel) -> the weight's (channel, tap) column, -1 for channel 3.
  EXPECT_EQ(detail::tap_major_source_column(0, 4 * 49, 4, 3), 0);
  EXPECT_EQ(detail::tap_major_source_column(1, 4 * 49, 4, 3), 49);
  EXPECT_EQ(detail::tap_major_source_column(2, 4 * 49, 4, 3), 98);
  EXPECT_EQ(detail::tap_major_source_column(3, 4 * 49, 4, 3), -1);
  EXPECT_EQ(detail::tap_major_source_column(4 * 48 + 2, 4 * 49, 4, 3), 2 * 49 + 48);
  EXPECT_EQ(detail::tap_major_source_column(4 * 48 + 3, 4 * 49, 4, 3), -1);
  // Unpadded: every column maps, a permutation of K.
  std::vector<int> seen(8 * 9, 0);
  for (int64_t kc = 0; kc < 8 * 9; ++kc)
    ++seen[detail::tap_major_source_column(kc, 8 * 9, 8, 8)];
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 8 * 9);
}
// The im2col TMA's map of a 2-d convolution with every spatial parameter different per dim
// (kernel 3 x 5, stride 2 x 3, padding (1, 2) before and (2, 0) after, dilation 1 x 2): NHWC
// dims and byte strides dimension 0 first; the corners -pad_before and pad_after - dilation ·
// (kernel - 1), the traversal strides and the largest offsets W first; and the box's strided
// lattice holds as many window origins per dim as the output has positions.
TEST(ConvIgemmIm2colTma, MapFieldsOfA2dConvolution) {
  const ConvIgemmShape s =
      testing::conv_case_shape(2, 64, 32, 1, {17, 20}, {3, 5}, {2, 3}, {1, 2}, {2, 0}, {1, 2});
  ASSERT_EQ(s.output[0], 9);
  ASSERT_EQ(s.output[1], 5);
  const detail::ConvIm2colMapFields f = detail::conv_im2col_map_fields(s, 64);
  EXPECT_EQ(f.rank, 4);
  const uint64_t dims[4] = {64, 20, 17, 2}, strides[3] = {256, 256 * 20, 256 * 20 * 17};
  for (int d = 0; d < 4; ++d)
    EXPECT_EQ(f.dims[d], dims[d]) << d;
  for (int d = 0; d < 3; ++d)
    EXPECT_EQ(f.strides[d], strides[d]) << d;
  EXPECT_EQ(f.lower[0], -2);
  EXPECT_EQ(f.lower[1], -1);
  EXPECT_EQ(f.upper[0], 0 - 2 * 4);
  EXPECT_EQ(f.upper[1], 2 - 1 * 2);
  const uint32_t element_strides[4] = {1, 3, 2, 1};
  for (int d = 0; d < 4; ++d)
    EXPECT_EQ(f.element_strides[d], element_strides[d]) << d;
  EXPECT_EQ(f.max_offset[0], 8);
  EXPECT_EQ(f.max_offset[1], 2);
  for (int i = 0; i < 2; ++i) {
    const int64_t last = static_cast<int64_t>(f.dims[1 + i]) - 1 + f.upper[i];
    EXPECT_EQ((last - f.lower[i]) / f.element_strides[1 + i] + 1, s.output[1 - i]) << i;
  }
  EXPECT_EQ(
      detail::conv_im2col_map_fields(testing::conv_case_shape(1, 32, 8, 1, {9}, {3}), 32).rank, 3);
  EXPECT_EQ(
      detail::conv_im2col_map_fields(testing::conv_case_shape(1, 32, 8, 1, {4, 5, 6}, {3}), 32)
          .dims[3],
      4u);  // D, after W and H
}

// Where the im2col TMA runs, by the limits the PTX ISA ("Tensors: im2col mode") and
// cuTensorMapEncodeIm2col set: one group, channels a multiple of 32, strides up to 8 (the map's
// elementStrides), the bounding box's corners within [-128, 127] for 2-d (an NHWC map), [-16, 15]
// for 3-d (NDHWC), [-32768, 32767] for 1-d (NWC), and the taps' offsets dilation · (kernel - 1)
// within [0, 255], [0, 31], [0, 65535]. Every TMA case is eligible.
TEST(ConvIgemmIm2colTma, EligibleWhereTheMapsLimitsHold) {
  auto problem = [](const ConvIgemmShape& s) { return conv_igemm_tma_im2col_problem(s); };
  auto has = [](const std::string& text, const char* part) {
    return text.find(part) != std::string::npos;
  };
  for (const ConvIgemmCase& c : testing::conv_igemm_tma_cases())
    EXPECT_EQ(problem(c.shape), "") << c.name;
  EXPECT_EQ(problem(testing::conv_case_shape(2, 64, 64, 1, {16, 16}, {3}, {1}, {1})), "");
  EXPECT_TRUE(conv_igemm_tma_im2col_eligible(
      testing::conv_case_shape(1, 32, 64, 1, {64, 64}, {7}, {2}, {3})));  // a 32-channel stem
  EXPECT_TRUE(has(problem(testing::conv_case_shape(1, 48, 8, 1, {8, 8}, {3})), "multiple of 32"));
  EXPECT_TRUE(has(problem(testing::conv_case_shape(1, 3, 8, 1, {8, 8}, {3})), "multiple of 32"));
  EXPECT_TRUE(has(problem(testing::conv_case_shape(1, 128, 8, 2, {8, 8}, {3})), "groups"));
  ConvIgemmShape bad_output = testing::conv_case_shape(1, 32, 8, 1, {8, 8}, {3});
  bad_output.output[0] = 7;
  EXPECT_TRUE(has(problem(bad_output), "output size"));  // conv_igemm_shape_problem's
  EXPECT_EQ(problem(testing::conv_case_shape(1, 32, 8, 1, {64, 64}, {8}, {8})), "");
  EXPECT_TRUE(has(problem(testing::conv_case_shape(1, 32, 8, 1, {64, 64}, {9}, {9})), "stride"));
  // 2-d corners: padding 128 is the lowest corner, 129 past it; pad_after past the top.
  EXPECT_EQ(problem(testing::conv_case_shape(1, 32, 8, 1, {4, 4}, {3}, {1}, {128})), "");
  EXPECT_TRUE(has(problem(testing::conv_case_shape(1, 32, 8, 1, {4, 4}, {3}, {1}, {129})),
                  "corner"));
  EXPECT_TRUE(has(problem(testing::conv_case_shape(1, 32, 8, 1, {4, 4}, {1}, {1}, {0}, {128})),
                  "corner"));
  // 2-d offsets: dilation 128 on a 3-tap kernel reaches 256 (with the corners in range).
  EXPECT_TRUE(has(problem(testing::conv_case_shape(1, 32, 8, 1, {4, 4}, {3}, {1}, {128}, {128},
                                                   {128})),
                  "offsets"));
  EXPECT_EQ(problem(testing::conv_case_shape(1, 32, 8, 1, {4, 4}, {3}, {1}, {127}, {127}, {127})),
            "");
  // 3-d: corners within [-16, 15], offsets within [0, 31].
  EXPECT_EQ(problem(testing::conv_case_shape(1, 32, 8, 1, {4, 4, 4}, {3}, {1}, {16})), "");
  EXPECT_TRUE(has(problem(testing::conv_case_shape(1, 32, 8, 1, {4, 4, 4}, {3}, {1}, {17})),
                  "corner"));
  EXPECT_EQ(problem(testing::conv_case_shape(1, 32, 8, 1, {20, 20, 20}, {3}, {1}, {0}, {0}, {8})),
            "");
  EXPECT_TRUE(has(problem(testing::conv_case_shape(1, 32, 8, 1, {4, 4, 4}, {3}, {1}, {16}, {16},
                                                   {16})),
                  "offsets"));
  // 1-d: the NWC map's ranges are wide.
  EXPECT_EQ(problem(testing::conv_case_shape(1, 32, 8, 1, {4}, {3}, {1}, {1000}, {1000}, {1000})),
            "");
}

// The emulation reproduces the loads the Triton gluon tutorial "TMA im2col mode and Convolution
// via Implicit GEMM" prints from the hardware: 16 positions of 4 x 4 images of 32 channels (each
// position's channels its index + 1), corners 0 or -1, offsets 0 or 1, the walk wrapping into
// the second image. (Its strided and 3-d behaviour is the GPU probe's to settle.)
TEST(ConvIgemmIm2colTma, EmulationReproducesPublishedLoads) {
  auto load = [](int images, int corner, int h, int w, int offset) {
    detail::ConvIm2colMapFields f;
    f.rank = 4;
    const uint64_t dims[4] = {32, 4, 4, static_cast<uint64_t>(images)};
    for (int d = 0; d < 4; ++d)
      f.dims[d] = dims[d], f.element_strides[d] = 1;
    f.strides[0] = 128, f.strides[1] = 512, f.strides[2] = 2048;
    f.lower[0] = f.lower[1] = f.upper[0] = f.upper[1] = corner;
    std::vector<float> x(static_cast<size_t>(images) * 16 * 32);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = static_cast<float>(i / 32 + 1);
    testing::Im2colLoad l;
    l.start[0] = w, l.start[1] = h, l.offset[0] = l.offset[1] = offset;
    const std::vector<float> tile = testing::emulate_im2col_tma(f, x, l, 16);
    std::vector<float> first_channel;
    for (int r = 0; r < 16; ++r)
      first_channel.push_back(tile[r * 32]);
    return first_channel;
  };
  auto range = [](float from) {
    std::vector<float> v;
    for (int i = 0; i < 16; ++i)
      v.push_back(from + i);
    return v;
  };
  EXPECT_EQ(load(1, 0, 0, 0, 0), range(1));
  EXPECT_EQ(load(1, -1, -1, -1, 0),
            (std::vector<float>{0, 0, 0, 0, 0, 1, 2, 3, 0, 5, 6, 7, 0, 9, 10, 11}));
  EXPECT_EQ(load(1, -1, -1, -1, 1), range(1));
  EXPECT_EQ(load(2, 0, 1, 3, 0), range(8));
  EXPECT_EQ(load(2, -1, 1, 2, 0),
            (std::vector<float>{7, 0, 9, 10, 11, 0, 0, 0, 0, 0, 17, 18, 19, 0, 21, 22}));
}

// The TMA boxes of an NCDHW x (kernels/conv_igemm_box_tma.cuh): the box a block's 128 output
// positions take (the fewest positions past the output; the widest of equals), and where the
// boxes run.
TEST(ConvIgemmBoxTma, TilesTheOutputWithTheFewestPositionsPastIt) {
  auto tile = [](int64_t h, int64_t w) {
    const detail::ConvBoxTile t = detail::conv_box_tile(h, w);
    return std::to_string(t.w) + "x" + std::to_string(t.h);
  };
  EXPECT_EQ(tile(126, 126), "128x1");  // 64 x 2 covers as many: the wider
  EXPECT_EQ(tile(62, 62), "64x2");
  EXPECT_EQ(tile(28, 28), "32x4");
  EXPECT_EQ(tile(14, 14), "16x8");
  EXPECT_EQ(tile(9, 8), "8x16");
  EXPECT_EQ(tile(1, 1000), "128x1");  // 1-d: one row
  EXPECT_EQ(tile(1, 3), "128x1");
  for (const auto& c : testing::conv_igemm_box_cases())
    EXPECT_TRUE(conv_igemm_box_tma_worth(c.shape)) << c.name << ": " << box_refusal(c.shape);
}

TEST(ConvIgemmBoxTma, RunsStrideOneSingleGroupFourAlignedRows) {
  auto has = [](const std::string& text, const char* part) {
    return text.find(part) != std::string::npos;
  };
  const ConvIgemmShape ok = testing::conv_case_shape(2, 64, 32, 1, {20, 24}, {3}, {1}, {1});
  EXPECT_EQ(conv_igemm_box_tma_problem(ok), "");
  EXPECT_TRUE(has(conv_igemm_box_tma_problem(testing::conv_case_shape(2, 64, 32, 1, {20, 24},
                                                                      {3}, {2}, {1})),
                  "stride"));
  EXPECT_TRUE(has(conv_igemm_box_tma_problem(testing::conv_case_shape(2, 64, 32, 2, {20, 24},
                                                                      {3}, {1}, {1})),
                  "groups"));
  EXPECT_TRUE(has(conv_igemm_box_tma_problem(testing::conv_case_shape(2, 64, 32, 1, {20, 22},
                                                                      {3}, {1}, {1})),
                  "multiple of 16 bytes"));  // rows of 22 floats
  ConvIgemmShape wrong_output = ok;
  wrong_output.output[1] += 1;
  EXPECT_TRUE(has(conv_igemm_box_tma_problem(wrong_output), "output size"));  // the shape check's
  // Worth it where padding the channels to 32 adds at most a third.
  auto worth = [](int64_t channels) {
    return conv_igemm_box_tma_worth(
        testing::conv_case_shape(1, channels, 16, 1, {16, 16}, {3}, {1}, {1}));
  };
  EXPECT_FALSE(worth(3));
  EXPECT_FALSE(worth(16));
  EXPECT_TRUE(worth(24));
  EXPECT_TRUE(worth(32));
  EXPECT_FALSE(worth(40));
  EXPECT_TRUE(worth(48));
  EXPECT_TRUE(worth(64));
  EXPECT_TRUE(worth(100));
}

// Every output position is one row of one tile, and the tiles' rows past the output are -1; the
// flat tiling (box_w 0) is M's rows in order.
TEST(ConvIgemmBoxTma, EveryOutputPositionIsOneTileRow) {
  for (const auto& c : testing::conv_igemm_box_cases()) {
    detail::ConvIgemmParams p = detail::conv_igemm_params(nullptr, nullptr, nullptr, nullptr,
                                                          c.shape, MatmulEpilogue::none);
    EXPECT_EQ(detail::conv_tile_position(p, 1, 5), p.m > 133 ? 133 : -1) << c.name;
    detail::conv_igemm_box_params(p, c.shape);
    std::vector<int> seen(static_cast<size_t>(p.m), 0);
    int past = 0;
    for (int tm = 0; tm < p.tiles_m; ++tm)
      for (int r = 0; r < detail::kGemmBM; ++r) {
        const int m = detail::conv_tile_position(p, tm, r);
        ASSERT_LT(m, p.m) << c.name;
        if (m < 0)
          ++past;
        else
          ++seen[static_cast<size_t>(m)];
      }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), p.m) << c.name;
    EXPECT_EQ(past, p.tiles_m * detail::kGemmBM - p.m) << c.name;
  }
}

// A K tile's box: the tile's box moved by the kernel position times the dilation, less the
// padding; its 32 channels; the image and depth of the tile. K ordered (tap, channel) over the
// channels padded to 32: 96 channels are three K tiles a tap.
TEST(ConvIgemmBoxTma, KTileCoordinatesAreTheShiftedBox) {
  // 2 images of 5 x 6 x 8, 96 channels, 3x3x3 kernel, padding 1 (2 after the rows), dilation
  // (1, 2, 1).
  const ConvIgemmShape s =
      testing::conv_case_shape(2, 96, 16, 1, {5, 6, 8}, {3}, {1}, {1}, {1, 2, 1}, {1, 2, 1});
  ASSERT_EQ(s.output[1], 6 + 3 - 4 - 1 + 1);
  detail::ConvIgemmParams p =
      detail::conv_igemm_params(nullptr, nullptr, nullptr, nullptr, s, MatmulEpilogue::none);
  detail::conv_igemm_box_params(p, s);
  EXPECT_EQ(p.channels, 96);
  EXPECT_EQ(p.k, 96 * 27);
  EXPECT_EQ(p.box_w, 16);  // 8 wide, 5 high: 16 x 8 and 8 x 16 cover as many
  EXPECT_EQ(p.box_h, 8);
  EXPECT_EQ(p.box_tiles_w, 1);
  EXPECT_EQ(p.box_tiles_h, 1);
  EXPECT_EQ(p.tiles_m, 2 * 5);  // a box per image and depth
  // Output tile 7: image 1, depth 2. K tile 3 · 4 + 2: tap 4 (kd 0, kh 1, kw 1), channels 64..95.
  const detail::ConvBoxCoords c = detail::conv_box_coords(p, 7, 14);
  EXPECT_EQ(c.image, 1);
  EXPECT_EQ(c.channel, 64);
  EXPECT_EQ(c.d, 2 + 0 * 1 - 1);
  EXPECT_EQ(c.h, 0 + 1 * 2 - 1);
  EXPECT_EQ(c.w, 0 + 1 * 1 - 1);
  // The map: W, H, D, C, N; boxes of 16 x 8 x 1 positions by 32 channels of one image.
  const detail::ConvBoxMapFields f = detail::conv_box_map_fields(s, detail::conv_box_tile(s));
  EXPECT_EQ(f.rank, 5);
  const uint64_t dims[5] = {8, 6, 5, 96, 2}, box[5] = {16, 8, 1, 32, 1};
  for (int d = 0; d < 5; ++d) {
    EXPECT_EQ(f.dims[d], dims[d]) << d;
    EXPECT_EQ(f.box[d], box[d]) << d;
  }
  EXPECT_EQ(f.strides[0], 8u * 4);
  EXPECT_EQ(f.strides[3], 8u * 6 * 5 * 96 * 4);
}

TEST(ConvIgemmShapeCheck, RefusesShapesItCannotRun) {
  ConvIgemmShape s = testing::conv_case_shape(1, 4, 8, 1, {8, 8}, {3}, {1}, {1});
  EXPECT_EQ(conv_igemm_shape_problem(s), "");
  ConvIgemmShape wrong_output = s;
  wrong_output.output[1] = 9;
  EXPECT_NE(conv_igemm_shape_problem(wrong_output), "");
  ConvIgemmShape uneven_groups = s;
  uneven_groups.groups = 3;
  EXPECT_NE(conv_igemm_shape_problem(uneven_groups), "");
  // A negative padding crops x: valid where the output size follows from it.
  ConvIgemmShape negative_pad = s;
  negative_pad.pad_before[0] = -1;
  EXPECT_NE(conv_igemm_shape_problem(negative_pad), "");
  negative_pad.output[0] = 6;
  EXPECT_EQ(conv_igemm_shape_problem(negative_pad), "");
  ConvIgemmShape huge = testing::conv_case_shape(1, 1024, 8, 1, {2048, 2048}, {1});
  EXPECT_NE(conv_igemm_shape_problem(huge), "");  // one image's input past int32
  ConvIgemmShape four_d = s;
  four_d.spatial = 4;
  EXPECT_NE(conv_igemm_shape_problem(four_d), "");
  // The launcher checks before it touches the device.
  float buffer = 0.0f;
  EXPECT_EQ(detail::launch_conv_igemm_tf32x3_mma_sync(nullptr, &buffer, nullptr, &buffer, s,
                                                      MatmulEpilogue::none, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(detail::launch_conv_igemm_tf32x3_mma_sync(&buffer, &buffer, nullptr, &buffer, s,
                                                      MatmulEpilogue::bias, nullptr),
            cudaErrorInvalidValue);  // a bias epilogue without a bias
  EXPECT_EQ(detail::launch_conv_igemm_tf32x3_mma_sync(&buffer, &buffer, nullptr, &buffer,
                                                      wrong_output, MatmulEpilogue::none, nullptr),
            cudaErrorInvalidValue);
  // ... and so does the class, before any device call.
  ConvIgemmTf32x3 conv;
  std::string error;
  EXPECT_EQ(conv.init(wrong_output, MatmulEpilogue::none, error), STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("output size"), std::string::npos) << error;
  EXPECT_EQ(conv.run(&buffer, &buffer, nullptr, &buffer, nullptr, error),
            STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("before a successful init"), std::string::npos) << error;
  EXPECT_EQ(conv.describe(), "not initialised");
  const float* transformed = nullptr;
  EXPECT_EQ(conv.transformed_input(&buffer, nullptr, detail::PlaneIdentity{}, transformed, error),
            STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(transformed, nullptr);
  EXPECT_FALSE(conv.copies_input());
  conv.set_input_transform(true);
  EXPECT_TRUE(conv.copies_input());  // every run copies x through the transform
  // An input transform reads x NCDHW: a channels-last x with one is refused at init.
  ConvIgemmTf32x3 transformed_last;
  transformed_last.set_input_transform(true);
  transformed_last.set_input_channels_last(true);
  EXPECT_EQ(transformed_last.init(s, MatmulEpilogue::none, error), STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("transformed x arrives NCDHW"), std::string::npos) << error;
  // x as a window of a larger buffer is read only by the transform's copy, images no closer
  // than one image.
  ConvIgemmTf32x3 window;
  window.set_input_image_floats(2 * s.in_channels * s.input[0] * s.input[1]);
  EXPECT_EQ(window.init(s, MatmulEpilogue::none, error), STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("need an input transform"), std::string::npos) << error;
  window.set_input_transform(true);
  window.set_input_image_floats(s.in_channels * s.input[0] * s.input[1] - 1);
  EXPECT_EQ(window.init(s, MatmulEpilogue::none, error), STITCH_ERROR_INVALID_ARGUMENT);
}

// init refuses a reduction type without set_channel_reduction, the reduction without its type or
// with an output map, more than one tile's channels, groups, or a forced tile that cannot hold
// every channel; the launcher, a reduction it cannot make. No device needed: each fails before
// the device is asked. (A run without the reduction init planned: the GPU test,
// conv_igemm_channel_reduction_test.cu.)
TEST(ConvIgemmShapeCheck, AChannelReductionItCannotMakeIsRefused) {
  using Min = detail::ChannelReduction<detail::ChannelReduceOp::min>;
  const ConvIgemmShape s = testing::conv_case_shape(1, 8, 96, 1, {8, 40}, {3});
  EXPECT_EQ(conv_igemm_channel_reduction_problem(s), "");
  std::string error;
  ConvIgemmTf32x3 plain;
  EXPECT_NE((plain.init<detail::PlaneIdentity, Min>(s, MatmulEpilogue::none, error)), STITCH_OK);
  EXPECT_NE(error.find("without set_channel_reduction"), std::string::npos) << error;
  ConvIgemmTf32 mapped;
  mapped.set_output_map(ConvIgemmOutputMap{});
  mapped.set_channel_reduction();
  EXPECT_NE((mapped.init<detail::PlaneIdentity, Min>(s, MatmulEpilogue::none, error)), STITCH_OK);
  EXPECT_NE(error.find("no output map"), std::string::npos) << error;
  ConvIgemmTf32x3 untyped;
  untyped.set_channel_reduction();
  EXPECT_NE(untyped.init(s, MatmulEpilogue::none, error), STITCH_OK);
  EXPECT_NE(error.find("needs its type"), std::string::npos) << error;
  const ConvIgemmShape wide = testing::conv_case_shape(1, 8, 130, 1, {8, 40}, {3});
  const ConvIgemmShape grouped = testing::conv_case_shape(1, 8, 64, 2, {8, 40}, {3});
  EXPECT_NE(conv_igemm_channel_reduction_problem(wide).find("at most 128"), std::string::npos);
  EXPECT_NE(conv_igemm_channel_reduction_problem(grouped).find("one group"), std::string::npos);
  for (const ConvIgemmShape& bad : {wide, grouped}) {
    ConvIgemmTf32 conv;
    conv.set_channel_reduction();
    EXPECT_NE((conv.init<detail::PlaneIdentity, Min>(bad, MatmulEpilogue::none, error)),
              STITCH_OK);
    EXPECT_EQ(error, "ConvIgemm::init: " + conv_igemm_channel_reduction_problem(bad));
  }
  for (int tile : {64, 256}) {  // narrower than 96 channels; wider than a reduction's tile
    ConvIgemmTf32 forced;
    forced.set_channel_reduction();
    forced.set_tile_n(tile);
    EXPECT_NE((forced.init<detail::PlaneIdentity, Min>(s, MatmulEpilogue::none, error)),
              STITCH_OK);
    EXPECT_NE(error.find("holding every channel"), std::string::npos) << error;
  }
  float buffer = 0.0f;
  EXPECT_EQ(detail::launch_conv_igemm_tf32x3_mma_sync(&buffer, &buffer, nullptr, &buffer, wide,
                                                      MatmulEpilogue::none, nullptr, nullptr,
                                                      detail::PlaneIdentity{}, Min{}),
            cudaErrorInvalidValue);
  const ConvIgemmOutputMap map;
  EXPECT_EQ(detail::launch_conv_igemm_tf32x3_mma_sync(&buffer, &buffer, nullptr, &buffer, s,
                                                      MatmulEpilogue::none, nullptr, &map,
                                                      detail::PlaneIdentity{}, Min{}),
            cudaErrorInvalidValue);
}

TEST(ConvIgemmShapeCheck, ParamsOfTheResNetStem) {
  const ConvIgemmShape s = testing::conv_case_shape(2, 3, 64, 1, {224, 224}, {7}, {2}, {3});
  const detail::ConvIgemmParams p =
      detail::conv_igemm_params(nullptr, nullptr, nullptr, nullptr, s, MatmulEpilogue::none);
  EXPECT_EQ(p.m, 2 * 112 * 112);
  EXPECT_EQ(p.n, 64);
  EXPECT_EQ(p.k, 3 * 49);
  EXPECT_EQ(p.tiles_m, (2 * 112 * 112 + 127) / 128);
  EXPECT_EQ(p.tiles_n, 1);
  EXPECT_EQ(p.in[0], 1);  // 2-d as 3-d with a unit depth
  EXPECT_EQ(p.in[1], 224);
  EXPECT_EQ(p.pad[2], 3);
  EXPECT_EQ(p.x_image, 3 * 224 * 224);
  EXPECT_EQ(p.y_image, 64 * 112 * 112);
}

}  // namespace
}  // namespace stitch::kernels
