// The output transform of the project's convolution kernels (plane_transform.cuh's signature: the
// elementwise rest of a convolution's epilogue, applied as the kernel stores): on every kernel
// class — ConvIgemmTf32x3 on mma.sync and on wgmma (either gather), ConvDirect, and the
// transposed forms by phases on both (the filled outputs included) — a run with the transform
// equals the plain run's output put through the transform on the CPU, bit for bit: each result
// transformed once, with its own (image, channel) plane, wherever the kernel stores it. The
// transform is an fmaf on both sides (no contraction differences). Label gpu; skips without a
// device.
#include <cuda_runtime.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "conv_direct_cases.cuh"
#include "conv_igemm_cases.cuh"
#include "conv_transpose_cases.cuh"
#include "kernel_test_support.cuh"
#include "kernels/conv_direct.cuh"
#include "kernels/conv_igemm_tf32x3.cuh"
#include "kernels/conv_transpose.cuh"

namespace stitch::kernels {
namespace {

using testing::ConvIgemmCase;
using testing::ConvTransposeCase;
using testing::DeviceBuffer;

// y = t · scale[plane] + plane % 5: a different map for every plane, so a wrong plane shows.
struct PlaneAffine {
  const float* scale;
  __host__ __device__ float operator()(int64_t plane, float t) const {
    return fmaf(t, scale[plane], static_cast<float>(plane % 5));
  }
};

enum class Engine { mma_sync, wgmma_ncdhw, wgmma, direct };

std::string engine_name(Engine engine) {
  switch (engine) {
    case Engine::mma_sync:
      return "mma_sync";
    case Engine::wgmma_ncdhw:
      return "wgmma_ncdhw";
    case Engine::wgmma:
      return "wgmma";
    case Engine::direct:
      return "direct";
  }
  return "?";
}

// Skips (visibly) an implicit-GEMM engine this build cannot run here.
#define REQUIRE_ENGINE(engine)                                                                   \
  do {                                                                                           \
    if ((engine) == Engine::direct) break;                                                       \
    std::string probe_error_;                                                                    \
    const int built_ = gemm_tf32x3_kernels_built(probe_error_);                                  \
    ASSERT_TRUE(probe_error_.empty()) << probe_error_;                                           \
    if (!(built_ &                                                                               \
          ((engine) == Engine::mma_sync ? detail::kGemmBuiltMmaSync : detail::kGemmBuiltWgmma))) \
      GTEST_SKIP() << engine_name(engine) << " is not in this build's code for this device";     \
  } while (0)

template <class Conv>
void configure(Conv& conv, Engine engine) {
  if constexpr (std::is_same_v<Conv, ConvIgemmTf32x3>) {
    conv.set_engine(engine == Engine::mma_sync ? Tf32x3Engine::mma_sync : Tf32x3Engine::wgmma);
    conv.allow_channels_last(engine == Engine::wgmma);
  } else if constexpr (std::is_same_v<Conv, ConvTransposeIgemmTf32x3>) {
    conv.set_engine(engine == Engine::mma_sync ? Tf32x3Engine::mma_sync : Tf32x3Engine::wgmma);
  }
}

// Runs `Conv` on `shape` plainly and with the transform (batch · out_channels planes of
// `plane_size`); expects the transformed run to be the plain one transformed on the CPU.
template <class Conv, class Shape>
void expect_transformed_bitwise(const Shape& shape, MatmulEpilogue epilogue, Engine engine,
                                int64_t x_count, int64_t w_count, int64_t y_count,
                                const std::string& name) {
  const int64_t planes = shape.batch * shape.out_channels, plane_size = y_count / planes;
  const auto x = testing::uniform_floats(x_count, 71, -1.f, 1.f);
  const auto w = testing::uniform_floats(w_count, 72, -1.f, 1.f);
  const auto bias = testing::uniform_floats(shape.out_channels, 73, -1.f, 1.f);
  const auto scale = testing::uniform_floats(planes, 74, -2.f, 2.f);
  DeviceBuffer<float> dx(x.size()), dw(w.size()), db(bias.size()), dscale(scale.size()),
      dy(y_count), dy_transformed(y_count);
  ASSERT_CUDA(dx.upload(x));
  ASSERT_CUDA(dw.upload(w));
  ASSERT_CUDA(db.upload(bias));
  ASSERT_CUDA(dscale.upload(scale));
  ASSERT_CUDA(cudaMemset(dy_transformed.data(), 0xff, y_count * sizeof(float)));  // NaN
  std::string error;
  Conv plain, transformed;
  configure(plain, engine);
  configure(transformed, engine);
  ASSERT_EQ(plain.init(shape, epilogue, error), STITCH_OK) << error;
  ASSERT_EQ(transformed.template init<PlaneAffine>(shape, epilogue, error), STITCH_OK) << error;
  ASSERT_EQ(plain.run(dx.data(), dw.data(), db.data(), dy.data(), nullptr, error), STITCH_OK)
      << error;
  ASSERT_EQ(transformed.run(dx.data(), dw.data(), db.data(), dy_transformed.data(), nullptr, error,
                            detail::PlaneIdentity{}, PlaneAffine{dscale.data()}),
            STITCH_OK)
      << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  std::vector<float> expected = dy.download();
  const PlaneAffine on_host{scale.data()};
  for (size_t i = 0; i < expected.size(); ++i)
    expected[i] = on_host(static_cast<int64_t>(i) / plane_size, expected[i]);
  EXPECT_TRUE(testing::bitwise_equal(dy_transformed.download(), expected))
      << name << " on " << transformed.describe();
}

class ConvOutputTransformTest : public ::testing::TestWithParam<std::tuple<ConvIgemmCase, Engine>> {
};

TEST_P(ConvOutputTransformTest, IsTheStoredResultTransformedPerPlane) {
  REQUIRE_GPU();
  const auto& [c, engine] = GetParam();
  REQUIRE_ENGINE(engine);
  const ConvIgemmShape& s = c.shape;
  if (engine == Engine::direct && !ConvDirect::shape_problem(s).empty())
    GTEST_SKIP() << c.name << ": past the direct kernel's K";
  const int64_t x = testing::conv_input_elements(s), w = testing::conv_weight_elements(s),
                y = testing::conv_output_elements(s);
  if (engine == Engine::direct)
    expect_transformed_bitwise<ConvDirect>(s, c.epilogue, engine, x, w, y, c.name);
  else
    expect_transformed_bitwise<ConvIgemmTf32x3>(s, c.epilogue, engine, x, w, y, c.name);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvOutputTransformTest,
    ::testing::Combine(::testing::ValuesIn(testing::conv_igemm_cases()),
                       ::testing::Values(Engine::mma_sync, Engine::wgmma_ncdhw, Engine::wgmma,
                                         Engine::direct)),
    [](const ::testing::TestParamInfo<std::tuple<ConvIgemmCase, Engine>>& info) {
      return std::get<0>(info.param).name + "_" + engine_name(std::get<1>(info.param));
    });

class ConvTransposeOutputTransformTest
    : public ::testing::TestWithParam<std::tuple<ConvTransposeCase, Engine>> {};

TEST_P(ConvTransposeOutputTransformTest, IsTheStoredResultTransformedPerPlane) {
  REQUIRE_GPU();
  const auto& [c, engine] = GetParam();
  REQUIRE_ENGINE(engine);
  const ConvTransposeShape d = detail::conv_transpose_3d(c.shape);
  const int64_t x = d.batch * d.in_channels * d.input[0] * d.input[1] * d.input[2];
  const int64_t w =
      d.in_channels * (d.out_channels / d.groups) * d.kernel[0] * d.kernel[1] * d.kernel[2];
  const int64_t y = d.batch * d.out_channels * d.output[0] * d.output[1] * d.output[2];
  if (engine == Engine::direct) {
    ConvTransposeDirect probe;
    std::string error;
    if (probe.init(c.shape, c.epilogue, error) != STITCH_OK)
      GTEST_SKIP() << c.name << ": " << error;
    expect_transformed_bitwise<ConvTransposeDirect>(c.shape, c.epilogue, engine, x, w, y, c.name);
  } else {
    expect_transformed_bitwise<ConvTransposeIgemmTf32x3>(c.shape, c.epilogue, engine, x, w, y,
                                                         c.name);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvTransposeOutputTransformTest,
    ::testing::Combine(::testing::ValuesIn(testing::conv_transpose_cases()),
                       ::testing::Values(Engine::mma_sync, Engine::wgmma, Engine::direct)),
    [](const ::testing::TestParamInfo<std::tuple<ConvTransposeCase, Engine>>& info) {
      return std::get<0>(info.param).name + "_" + engine_name(std::get<1>(info.param));
    });

}  // namespace
}  // namespace stitch::kernels
