// kernels/runtime.cuh on a GPU: the Arena (alignment, growth, out-of-memory as a status), the
// GraphCache (capture once, replay reading fresh memory, LRU eviction, the legacy stream and a
// caller's own capture run directly, a capture that fails falls back and disables graphs), launch
// errors through STITCH_CHECK_LAUNCH, and the cached device properties. Skips without a device.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_support.cuh"
#include "kernels/elementwise.cuh"
#include "kernels/runtime.cuh"

namespace stitch::kernels {
namespace {

using testing::DeviceBuffer;

constexpr int64_t kN = 1000;

struct AddOne {
  __device__ void operator()(const float (&x)[1], float (&y)[1]) const { y[0] = x[0] + 1.0f; }
};

// What a program's forward would record: y = x + 1.
int add_one(const float* x, float* y, cudaStream_t stream, std::string& error) {
  const TensorOperand in[1] = {{x, kDtypeFloat32, 0, {1}}};
  const OutOperand out[1] = {{y, kDtypeFloat32, 0, {1}}};
  STITCH_CHECK_CUDA(launch_elementwise(AddOne{}, in, out, 1, &kN, stream));
  return STITCH_OK;
}

void fill(DeviceBuffer<float>& buffer, float value) {
  ASSERT_CUDA(buffer.upload(std::vector<float>(buffer.size(), value)));
}

bool all_equal(const std::vector<float>& v, float value) {
  return std::all_of(v.begin(), v.end(), [value](float e) { return e == value; });
}

class GraphCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_GPU();
    ASSERT_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  // A recorder that counts how often the forward work is recorded (captured or run directly).
  auto recorder(const float* x, float* y) {
    return [this, x, y](cudaStream_t s) {
      ++records_;
      return add_one(x, y, s, error_);
    };
  }

  cudaStream_t stream_ = nullptr;
  int records_ = 0;
  std::string error_;
};

TEST_F(GraphCacheTest, CapturesOnceReplaysAndEvictsLeastRecent) {
  DeviceBuffer<float> x(kN), y(kN), x2(kN), y2(kN);
  GraphCache cache(2);
  const void* key1[] = {x.data(), y.data()};
  const void* key2[] = {x2.data(), y2.data()};
  const void* key3[] = {x.data(), y2.data()};

  fill(x, 1.0f);
  ASSERT_EQ(cache.run(key1, 2, stream_, recorder(x.data(), y.data()), error_), STITCH_OK) << error_;
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  EXPECT_EQ(records_, 1);
  EXPECT_EQ(cache.size(), 1);
  EXPECT_TRUE(cache.enabled());
  EXPECT_TRUE(all_equal(y.download(), 2.0f));

  // A replay records nothing and reads the buffers' current contents.
  fill(x, 5.0f);
  ASSERT_EQ(cache.run(key1, 2, stream_, recorder(x.data(), y.data()), error_), STITCH_OK) << error_;
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  EXPECT_EQ(records_, 1);
  EXPECT_TRUE(all_equal(y.download(), 6.0f));

  fill(x2, 10.0f);
  ASSERT_EQ(cache.run(key2, 2, stream_, recorder(x2.data(), y2.data()), error_), STITCH_OK);
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  EXPECT_EQ(records_, 2);
  EXPECT_EQ(cache.size(), 2);
  EXPECT_TRUE(all_equal(y2.download(), 11.0f));

  // A third key evicts key1, the least recently used.
  ASSERT_EQ(cache.run(key3, 2, stream_, recorder(x.data(), y2.data()), error_), STITCH_OK);
  EXPECT_EQ(records_, 3);
  EXPECT_EQ(cache.size(), 2);
  ASSERT_EQ(cache.run(key2, 2, stream_, recorder(x2.data(), y2.data()), error_), STITCH_OK);
  EXPECT_EQ(records_, 3);
  ASSERT_EQ(cache.run(key1, 2, stream_, recorder(x.data(), y.data()), error_), STITCH_OK);
  EXPECT_EQ(records_, 4);
  ASSERT_CUDA(cudaStreamSynchronize(stream_));

  // Moving keeps the graphs.
  GraphCache moved = std::move(cache);
  EXPECT_EQ(moved.size(), 2);
  ASSERT_EQ(moved.run(key1, 2, stream_, recorder(x.data(), y.data()), error_), STITCH_OK);
  EXPECT_EQ(records_, 4);
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
}

TEST_F(GraphCacheTest, LegacyStreamRunsDirectly) {
  DeviceBuffer<float> x(kN), y(kN);
  GraphCache cache;
  const void* key[] = {x.data(), y.data()};
  fill(x, 1.0f);
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(cache.run(key, 2, nullptr, recorder(x.data(), y.data()), error_), STITCH_OK);
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_EQ(records_, 2);
  EXPECT_EQ(cache.size(), 0);
  EXPECT_TRUE(cache.enabled());
  EXPECT_TRUE(all_equal(y.download(), 2.0f));
}

TEST_F(GraphCacheTest, CallersCaptureGetsTheWork) {
  DeviceBuffer<float> x(kN), y(kN);
  GraphCache cache;
  const void* key[] = {x.data(), y.data()};
  fill(x, 3.0f);
  ASSERT_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  const int status = cache.run(key, 2, stream_, recorder(x.data(), y.data()), error_);
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaStreamEndCapture(stream_, &graph));
  ASSERT_EQ(status, STITCH_OK) << error_;
  EXPECT_EQ(records_, 1);
  EXPECT_EQ(cache.size(), 0);
  cudaGraphExec_t exec = nullptr;
  ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  ASSERT_CUDA(cudaGraphLaunch(exec, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  EXPECT_TRUE(all_equal(y.download(), 4.0f));
}

TEST_F(GraphCacheTest, FailedCaptureFallsBackAndDisablesGraphs) {
  DeviceBuffer<float> x(kN), y(kN);
  GraphCache cache;
  const void* key[] = {x.data(), y.data()};
  fill(x, 1.0f);
  // Synchronising a capturing stream is illegal: the capture fails, the direct run works.
  auto syncing = [&](cudaStream_t s) {
    ++records_;
    std::string& error = error_;
    STITCH_CHECK_CUDA(cudaStreamSynchronize(s));
    return add_one(x.data(), y.data(), s, error);
  };
  ASSERT_EQ(cache.run(key, 2, stream_, syncing, error_), STITCH_OK) << error_;
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  EXPECT_EQ(records_, 2);  // the failed capture, then the direct run
  EXPECT_FALSE(cache.enabled());
  EXPECT_EQ(cache.size(), 0);
  EXPECT_TRUE(all_equal(y.download(), 2.0f));
  ASSERT_CUDA(cudaGetLastError());  // the failed capture left no error behind
  ASSERT_EQ(cache.run(key, 2, stream_, syncing, error_), STITCH_OK) << error_;
  EXPECT_EQ(records_, 3);
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
}

TEST(Arena, ReservesAlignedSlicesAndReportsOutOfMemory) {
  REQUIRE_GPU();
  std::string error;
  Arena arena;
  ASSERT_EQ(arena.reserve(1000, error), STITCH_OK) << error;
  EXPECT_EQ(arena.bytes(), 1024u);
  ASSERT_NE(arena.at(0), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(arena.at(0)) % Arena::kAlignment, 0u);
  EXPECT_EQ(arena.at(2000), nullptr);
  void* base = arena.at(0);
  ASSERT_EQ(arena.reserve(512, error), STITCH_OK);
  EXPECT_EQ(arena.at(0), base);  // enough already: kept
  ASSERT_EQ(arena.reserve(4096, error), STITCH_OK);
  EXPECT_EQ(arena.bytes(), 4096u);
  ASSERT_CUDA(cudaMemset(arena.at(256), 0, 256));

  Arena moved = std::move(arena);
  EXPECT_EQ(moved.bytes(), 4096u);
  EXPECT_EQ(arena.bytes(), 0u);
  EXPECT_EQ(arena.at(0), nullptr);

  Arena huge;
  EXPECT_EQ(huge.reserve(size_t{1} << 60, error), STITCH_ERROR_OUT_OF_MEMORY);
  EXPECT_NE(error.find("cudaErrorMemoryAllocation"), std::string::npos) << error;
  EXPECT_EQ(huge.bytes(), 0u);
  ASSERT_CUDA(cudaGetLastError());
}

__global__ void noop_kernel() {}

int launch_too_many_threads(std::string& error) {
  noop_kernel<<<1, 4096, 0, nullptr>>>();
  STITCH_CHECK_LAUNCH();
  return STITCH_OK;
}

TEST(Runtime, CheckLaunchReportsConfigurationErrors) {
  REQUIRE_GPU();
  std::string error;
  EXPECT_EQ(launch_too_many_threads(error), STITCH_ERROR_CUDA);
  // The runtime names the bad block size InvalidConfiguration or (CUDA 13 on an H200)
  // InvalidValue; either way the check reports it with its place.
  EXPECT_TRUE(error.find("cudaErrorInvalidConfiguration") != std::string::npos ||
              error.find("cudaErrorInvalidValue") != std::string::npos)
      << error;
  EXPECT_NE(error.find("runtime_test.cu:"), std::string::npos) << error;
  ASSERT_CUDA(cudaGetLastError());
}

TEST(Runtime, DevicePropertiesMatchTheRuntime) {
  REQUIRE_GPU();
  DeviceProperties props;
  ASSERT_CUDA(current_device_properties(props));
  cudaDeviceProp expected{};
  ASSERT_CUDA(cudaGetDeviceProperties(&expected, 0));
  EXPECT_EQ(props.sm_count, expected.multiProcessorCount);
  EXPECT_EQ(props.max_threads_per_sm, expected.maxThreadsPerMultiProcessor);
  DeviceProperties cached;
  ASSERT_CUDA(current_device_properties(cached));
  EXPECT_EQ(cached.sm_count, props.sm_count);
  int64_t grid = 0;
  ASSERT_CUDA(grid_stride_blocks(int64_t{1} << 40, 256, grid));
  EXPECT_EQ(grid, int64_t{props.sm_count} * (props.max_threads_per_sm / 256));
  ASSERT_CUDA(grid_stride_blocks(1, 256, grid));
  EXPECT_EQ(grid, 1);
}

}  // namespace
}  // namespace stitch::kernels
