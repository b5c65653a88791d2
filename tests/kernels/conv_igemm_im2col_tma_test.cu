// kernels/conv_igemm_im2col_tma.cuh on a GPU (label gpu; skips visibly without a compute
// capability 9.0 device running this sm_90a build), over every shape of conv_igemm_cases.cuh the
// im2col TMA can load:
// - the probe: every load the wgmma kernel would issue for a shape (conv_im2col_coords over each
//   output tile and K tile) through the map encode_conv_im2col_map makes, one per block, its tile
//   copied out unswizzled and held to the emulation of conv_im2col_tma_emulation.cuh — x numbered,
//   so a value names its source, and a mismatch reports the load and which walk position read
//   what: which part of the header's reading of the PTX ISA (corners, traversal stride, offsets,
//   the wrap into the next image, the swizzle) the hardware disagrees with;
// - the wgmma kernel with A by the im2col TMA against its chunked cp.async gather, bit for bit
//   (the same tile in shared memory, the same products), on both tile widths and both product
//   counts, from the run's copy of x (the map encoded at init) and from a channels-last x itself
//   (encoded per run); and a captured CUDA graph replays the map of the x it captured (of the
//   im2col TMA's, and of the TMA boxes' of an NCDHW x: conv_igemm_box_tma.cuh).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "conv_igemm_cases.cuh"
#include "conv_im2col_tma_emulation.cuh"
#include "kernel_test_support.cuh"
#include "kernels/conv_igemm_im2col_tma.cuh"
#include "kernels/conv_igemm_tf32x3.cuh"

namespace stitch::kernels {
namespace {

using testing::ConvIgemmCase;
using testing::DeviceBuffer;
using testing::transpose_batched;

// Skips (visibly) where this build's wgmma code cannot run: no compute capability 9.0 device.
#define REQUIRE_WGMMA()                                                               \
  do {                                                                                \
    std::string probe_error_;                                                         \
    const int built_ = gemm_tf32x3_kernels_built(probe_error_);                       \
    ASSERT_TRUE(probe_error_.empty()) << probe_error_;                                \
    if (!(built_ & detail::kGemmBuiltWgmma))                                          \
      GTEST_SKIP() << "the wgmma kernel is not in this build's code for this device"; \
  } while (0)

#define REQUIRE_IM2COL_TMA(shape)                                                \
  do {                                                                           \
    if (!conv_igemm_tma_im2col_eligible(shape))                                  \
      GTEST_SKIP() << "no im2col TMA: " << conv_igemm_tma_im2col_problem(shape); \
  } while (0)

#if defined(STITCH_GEMM_WGMMA)
// Waits for phase 0 of `bar` a bounded number of tries: false where the load's bytes never arrive
// (an expect_tx the load does not match would otherwise hang the test).
__device__ bool wait_bounded(uint64_t* bar) {
  for (int i = 0; i < (1 << 22); ++i) {
    uint32_t done = 0;
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(detail::smem_address(bar))
        : "memory");
    if (done != 0) return true;
  }
  return false;
}
#endif

// One im2col load per block through `map` (rank spatial + 2), its 128 x 32 tile copied out
// unswizzled: out[block][row][channel]; timed_out[block] set where its bytes never arrived.
__global__ void im2col_probe_kernel(const __grid_constant__ CUtensorMap map, int spatial,
                                    const detail::ConvIm2colCoords* loads, float* out,
                                    int* timed_out) {
#if defined(STITCH_GEMM_WGMMA)
  extern __shared__ float4 probe_smem[];
  __shared__ uint64_t bar;
  uint8_t* const raw = reinterpret_cast<uint8_t*>(probe_smem);
  float* const tile =
      reinterpret_cast<float*>(raw + ((1024 - (detail::smem_address(raw) & 1023)) & 1023));
  if (threadIdx.x == 0) {
    detail::mbarrier_init(&bar, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    detail::mbarrier_arrive_expect_tx(&bar, detail::kWgmmaTileBytes);
    detail::tma_load_conv_im2col(tile, &map, spatial, loads[blockIdx.x], &bar);
  }
  if (!wait_bounded(&bar)) {
    timed_out[blockIdx.x] = 1;
    return;
  }
  float* const o = out + int64_t{blockIdx.x} * detail::kWgmmaTileFloats;
  for (int i = threadIdx.x; i < detail::kWgmmaTileFloats; i += blockDim.x)
    o[i] = tile[detail::wgmma_a_offset(i / detail::kGemmBK, i % detail::kGemmBK)];
#else
  (void)map, (void)spatial, (void)loads, (void)out, (void)timed_out;
#endif
}

// What the numbered x holds at value v (element v - 1, channels-last): "x[image n][(w, h, d)]
// [channel c]", or "zero".
std::string numbered_source(const detail::ConvIm2colMapFields& f, float v) {
  if (v == 0.0f) return "zero";
  if (!(v >= 1.0f && v < 16777216.0f) || v != static_cast<float>(static_cast<int64_t>(v)))
    return "not an element of x (" + std::to_string(v) + ")";
  auto index = static_cast<int64_t>(v) - 1;
  const auto channels = static_cast<int64_t>(f.dims[0]);
  const int64_t channel = index % channels;
  index /= channels;
  std::string at;
  for (int i = 0; i < f.rank - 2; ++i) {
    const auto size = static_cast<int64_t>(f.dims[1 + i]);
    at += (i > 0 ? ", " : "") + std::to_string(index % size);
    index /= size;
  }
  return "x[image " + std::to_string(index) + "][(" + at + ")][channel " +
         std::to_string(channel) + "]";
}

class ConvIm2colTmaProbe : public ::testing::TestWithParam<ConvIgemmCase> {};

TEST_P(ConvIm2colTmaProbe, LoadsMatchTheEmulatedWalk) {
  REQUIRE_GPU();
  REQUIRE_WGMMA();
  const ConvIgemmShape& s = GetParam().shape;
  REQUIRE_IM2COL_TMA(s);
  detail::ConvIgemmParams p =
      detail::conv_igemm_params(nullptr, nullptr, nullptr, nullptr, s, MatmulEpilogue::none);
  detail::conv_igemm_channels_last(p, s);
  const detail::ConvIm2colMapFields f = detail::conv_im2col_map_fields(s, p.pixel_stride);
  std::vector<float> x(static_cast<size_t>(p.x_image * s.batch));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i + 1);  // exact below 2^24: a value names its element
  ASSERT_LT(x.size(), size_t{1} << 24);
  // Every load of every output tile over the whole K range, the cursor carried as the producer
  // carries it.
  std::vector<detail::ConvIm2colCoords> loads;
  std::vector<std::pair<int, int>> tile_of;  // (tm, kt)
  for (int tm = 0; tm < p.tiles_m; ++tm) {
    const detail::ConvWindowOrigin origin = detail::conv_window_origin(p, tm * detail::kGemmBM);
    detail::ConvKCursor cursor;
    cursor.start_taps(p, 0);
    for (int kt = 0; kt * detail::kGemmBK < p.k; ++kt) {
      loads.push_back(detail::conv_im2col_coords(p, origin, cursor));
      tile_of.emplace_back(tm, kt);
      cursor.advance_taps(p, detail::kGemmBK);
    }
  }
  DeviceBuffer<float> dx(x.size()), out(loads.size() * detail::kWgmmaTileFloats);
  DeviceBuffer<detail::ConvIm2colCoords> dloads(loads.size());
  DeviceBuffer<int> timed_out(loads.size());
  ASSERT_CUDA(dx.upload(x));
  ASSERT_CUDA(dloads.upload(loads));
  ASSERT_CUDA(cudaMemset(timed_out.data(), 0, loads.size() * sizeof(int)));
  ASSERT_CUDA(cudaMemset(out.data(), 0xff, out.size() * sizeof(float)));  // NaN: unwritten shows
  std::string error;
  const auto encode = reinterpret_cast<PFN_cuTensorMapEncodeIm2col_v12000>(
      detail::tensor_map_encoder("cuTensorMapEncodeIm2col", error));
  ASSERT_NE(encode, nullptr) << error;
  CUtensorMap map{};
  ASSERT_EQ(detail::encode_conv_im2col_map(encode, s, p.pixel_stride, dx.data(), map, error),
            STITCH_OK)
      << error;
  im2col_probe_kernel<<<static_cast<unsigned>(loads.size()), 128,
                        detail::kWgmmaTileBytes + 1024>>>(map, s.spatial, dloads.data(),
                                                          out.data(), timed_out.data());
  ASSERT_CUDA(cudaGetLastError());
  ASSERT_CUDA(cudaDeviceSynchronize());
  const std::vector<int> late = timed_out.download();
  ASSERT_EQ(std::count(late.begin(), late.end(), 1), 0)
      << "loads whose 16 KiB never arrived (expect_tx not what the load completes)";
  const std::vector<float> got = out.download();
  int wrong_loads = 0;
  for (size_t l = 0; l < loads.size(); ++l) {
    const testing::Im2colLoad load = testing::im2col_load(loads[l]);
    const std::vector<float> want = testing::emulate_im2col_tma(f, x, load);
    const std::vector<testing::Im2colPosition> walk =
        testing::im2col_walk(f, load, detail::kIm2colPixels);
    const float* tile = got.data() + l * detail::kWgmmaTileFloats;
    constexpr int kChannels = detail::kIm2colChannels;
    auto row_differs = [&](int r) {  // NaN (unwritten) differs from everything
      for (int c = 0; c < kChannels; ++c)
        if (!(tile[r * kChannels + c] == want[r * kChannels + c])) return true;
      return false;
    };
    int wrong_rows = 0, first_row = -1;
    for (int r = 0; r < detail::kIm2colPixels; ++r)
      if (row_differs(r)) {
        if (first_row < 0) first_row = r;
        ++wrong_rows;
      }
    if (wrong_rows == 0 || wrong_loads++ >= 3) continue;
    std::string report = "tile " + std::to_string(tile_of[l].first) + ", K tile " +
                         std::to_string(tile_of[l].second) + ": channel " +
                         std::to_string(load.channel) + ", start " +
                         testing::im2col_position_name(f, walk[0]) + ", offsets (" +
                         std::to_string(load.offset[0]) + ", " + std::to_string(load.offset[1]) +
                         ", " + std::to_string(load.offset[2]) + "): " +
                         std::to_string(wrong_rows) + " of 128 rows differ";
    for (int r = first_row, shown = 0; r < detail::kIm2colPixels && shown < 4; ++r) {
      if (!row_differs(r)) continue;
      int c = 0;  // the row's first differing channel
      while (tile[r * kChannels + c] == want[r * kChannels + c]) ++c;
      report += "\n  row " + std::to_string(r) + " (walk " +
                testing::im2col_position_name(f, walk[r]) + "), channel " + std::to_string(c) +
                ": got " + numbered_source(f, tile[r * kChannels + c]) + ", want " +
                numbered_source(f, want[r * kChannels + c]);
      ++shown;
    }
    ADD_FAILURE() << GetParam().name << ": " << report;
  }
  EXPECT_EQ(wrong_loads, 0) << "of " << loads.size() << " loads";
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvIm2colTmaProbe,
                         ::testing::ValuesIn(testing::conv_igemm_cases()),
                         testing::case_name<ConvIgemmCase>);
INSTANTIATE_TEST_SUITE_P(TmaShapes, ConvIm2colTmaProbe,
                         ::testing::ValuesIn(testing::conv_igemm_tma_cases()),
                         testing::case_name<ConvIgemmCase>);

int64_t input_positions(const ConvIgemmShape& s) {
  int64_t positions = 1;
  for (int i = 0; i < s.spatial; ++i)
    positions *= s.input[i];
  return positions;
}

// Whether two NCDHW outputs of shape s are bit for bit equal; else which GEMM rows (output
// positions) differ — the first one's image, position and tile row, and how many — so a wrong
// walk shows where it went wrong.
::testing::AssertionResult same_output(const ConvIgemmShape& s, const std::vector<float>& want,
                                       const std::vector<float>& got) {
  if (testing::bitwise_equal(want, got)) return ::testing::AssertionSuccess();
  int64_t out_plane = 1;
  for (int i = 0; i < s.spatial; ++i)
    out_plane *= s.output[i];
  std::vector<bool> row_differs(static_cast<size_t>(s.batch * out_plane), false);
  for (size_t i = 0; i < want.size(); ++i)
    if (std::memcmp(&want[i], &got[i], sizeof(float)) != 0) {
      const int64_t position = static_cast<int64_t>(i) % out_plane;
      const int64_t image = static_cast<int64_t>(i) / out_plane / s.out_channels;
      row_differs[image * out_plane + position] = true;
    }
  const auto first = std::find(row_differs.begin(), row_differs.end(), true) - row_differs.begin();
  return ::testing::AssertionFailure()
         << std::count(row_differs.begin(), row_differs.end(), true) << " of "
         << row_differs.size() << " output positions differ; the first: m " << first
         << " (image " << first / out_plane << ", position " << first % out_plane << ", tile "
         << first / detail::kGemmBM << " row " << first % detail::kGemmBM << ")";
}

class ConvIm2colTmaKernel : public ::testing::TestWithParam<std::tuple<ConvIgemmCase, int>> {};

// Runs the case on `Conv` (3xTF32 or one product) three ways at tile width tile_n — the chunked
// gather, the im2col TMA from the run's channels-last copy of x, the im2col TMA from x arriving
// channels-last — and holds the TMA runs to the chunked one, bit for bit.
template <class Conv>
void expect_tma_matches_chunked(const ConvIgemmCase& c, int tile_n, const char* products) {
  const ConvIgemmShape& s = c.shape;
  const int64_t in_plane = input_positions(s);
  const auto x = testing::uniform_floats(testing::conv_input_elements(s), 51, -1.f, 1.f);
  const auto w = testing::uniform_floats(testing::conv_weight_elements(s), 52, -1.f, 1.f);
  const auto bias = testing::uniform_floats(s.out_channels, 53, -1.f, 1.f);
  const std::vector<float> x_last = transpose_batched(x, s.batch, s.in_channels, in_plane);
  DeviceBuffer<float> dx(x.size()), dx_last(x.size()), dw(w.size()), db(bias.size());
  ASSERT_CUDA(dx.upload(x));
  ASSERT_CUDA(dx_last.upload(x_last));
  ASSERT_CUDA(dw.upload(w));
  ASSERT_CUDA(db.upload(bias));
  Conv chunked, from_copy, from_x;
  for (Conv* conv : {&chunked, &from_copy, &from_x}) {
    conv->set_engine(Tf32x3Engine::wgmma);
    conv->set_tile_n(tile_n);
    conv->allow_tma_im2col(conv != &chunked);
    conv->allow_box_tma(false);  // x NCDHW: the copy, not boxes
  }
  from_x.set_input_channels_last(true);
  std::string error;
  for (Conv* conv : {&chunked, &from_copy, &from_x}) {
    ASSERT_EQ(conv->init(s, c.epilogue, error), STITCH_OK) << error;
    ASSERT_EQ(conv->prepare_weights(dw.data(), nullptr, error), STITCH_OK) << error;
  }
  EXPECT_FALSE(chunked.uses_tma_im2col());
  EXPECT_TRUE(chunked.uses_channels_last()) << chunked.describe();
  EXPECT_TRUE(from_copy.uses_tma_im2col()) << from_copy.describe();
  EXPECT_TRUE(from_x.uses_tma_im2col()) << from_x.describe();
  EXPECT_FALSE(from_x.copies_input()) << from_x.describe();  // its map is x's, per run
  const size_t ys = testing::conv_output_elements(s);
  DeviceBuffer<float> y_chunked(ys), y_copy(ys), y_x(ys);
  for (DeviceBuffer<float>* y : {&y_copy, &y_x})
    ASSERT_CUDA(cudaMemset(y->data(), 0xff, ys * sizeof(float)));  // NaN: every output written
  ASSERT_EQ(chunked.run(dx.data(), nullptr, db.data(), y_chunked.data(), nullptr, error),
            STITCH_OK)
      << error;
  ASSERT_EQ(from_copy.run(dx.data(), nullptr, db.data(), y_copy.data(), nullptr, error), STITCH_OK)
      << error;
  ASSERT_EQ(from_x.run(dx_last.data(), nullptr, db.data(), y_x.data(), nullptr, error), STITCH_OK)
      << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  const std::vector<float> want = y_chunked.download();
  EXPECT_TRUE(same_output(s, want, y_copy.download()))
      << c.name << ", " << products << ", from the copy: " << from_copy.describe();
  EXPECT_TRUE(same_output(s, want, y_x.download()))
      << c.name << ", " << products << ", from x: " << from_x.describe();
}

TEST_P(ConvIm2colTmaKernel, MatchesTheChunkedGatherBitForBit) {
  REQUIRE_GPU();
  REQUIRE_WGMMA();
  const auto& [c, tile_n] = GetParam();
  REQUIRE_IM2COL_TMA(c.shape);
  expect_tma_matches_chunked<ConvIgemmTf32x3>(c, tile_n, "3xTF32");
  expect_tma_matches_chunked<ConvIgemmTf32>(c, tile_n, "one TF32 product");
}

std::string case_width_name(const ::testing::TestParamInfo<std::tuple<ConvIgemmCase, int>>& info) {
  return std::get<0>(info.param).name + "_" + std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvIm2colTmaKernel,
                         ::testing::Combine(::testing::ValuesIn(testing::conv_igemm_cases()),
                                            ::testing::Values(64, 128)),
                         case_width_name);
INSTANTIATE_TEST_SUITE_P(TmaShapes, ConvIm2colTmaKernel,
                         ::testing::Combine(::testing::ValuesIn(testing::conv_igemm_tma_cases()),
                                            ::testing::Values(64, 128)),
                         case_width_name);

// x arriving channels-last (the im2col TMA) or NCDHW (the boxes, conv_igemm_box_tma.cuh) is read
// through a map encoded per run: a graph captured from one run holds that run's map (a kernel
// argument), so replaying it after a run on another x still reads the x it captured — as
// GraphCache (kernels/runtime.cuh) keys its graphs by the pointers.
void expect_graph_keeps_the_map_of_its_x(const ConvIgemmShape& s, bool boxes) {
  const size_t xs = testing::conv_input_elements(s), ys = testing::conv_output_elements(s);
  DeviceBuffer<float> x1(xs), x2(xs), w(testing::conv_weight_elements(s)), y_eager(ys),
      y_graph(ys), y_other(ys);
  ASSERT_CUDA(x1.upload(testing::uniform_floats(xs, 61, -1.f, 1.f)));
  ASSERT_CUDA(x2.upload(testing::uniform_floats(xs, 62, -1.f, 1.f)));
  ASSERT_CUDA(w.upload(testing::uniform_floats(w.size(), 63, -1.f, 1.f)));
  ConvIgemmTf32x3 conv;
  conv.set_engine(Tf32x3Engine::wgmma);
  conv.set_input_channels_last(!boxes);
  std::string error;
  ASSERT_EQ(conv.init(s, MatmulEpilogue::none, error), STITCH_OK) << error;
  ASSERT_EQ(conv.prepare_weights(w.data(), nullptr, error), STITCH_OK) << error;
  // The defaults where eligible.
  ASSERT_EQ(boxes ? conv.uses_box_tma() : conv.uses_tma_im2col(), true) << conv.describe();
  ASSERT_FALSE(conv.copies_input());
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ASSERT_EQ(conv.run(x1.data(), nullptr, nullptr, y_eager.data(), stream, error), STITCH_OK)
      << error;
  ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  const int captured = conv.run(x1.data(), nullptr, nullptr, y_graph.data(), stream, error);
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaStreamEndCapture(stream, &graph));
  ASSERT_EQ(captured, STITCH_OK) << error;
  cudaGraphExec_t exec = nullptr;
  ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  ASSERT_EQ(conv.run(x2.data(), nullptr, nullptr, y_other.data(), stream, error), STITCH_OK)
      << error;
  ASSERT_CUDA(cudaGraphLaunch(exec, stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  EXPECT_TRUE(same_output(s, y_eager.download(), y_graph.download()));
  EXPECT_FALSE(testing::bitwise_equal(y_eager.download(), y_other.download()));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST(ConvIm2colTmaKernel, ACapturedGraphKeepsTheMapOfItsX) {
  REQUIRE_GPU();
  REQUIRE_WGMMA();
  const ConvIgemmShape s = testing::conv_case_shape(3, 32, 48, 1, {17, 17}, {3}, {2}, {1});
  REQUIRE_IM2COL_TMA(s);
  expect_graph_keeps_the_map_of_its_x(s, false);
}

TEST(ConvBoxTmaKernel, ACapturedGraphKeepsTheMapOfItsX) {
  REQUIRE_GPU();
  REQUIRE_WGMMA();
  const ConvIgemmShape s = testing::conv_case_shape(3, 32, 48, 1, {16, 32}, {3}, {1}, {1});
  ASSERT_TRUE(conv_igemm_box_tma_worth(s)) << conv_igemm_box_tma_problem(s);
  expect_graph_keeps_the_map_of_its_x(s, true);
}

}  // namespace
}  // namespace stitch::kernels
