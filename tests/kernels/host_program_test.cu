// kernels/host_program.cuh on a GPU through the tiny hand-written program (tiny_program.cuh):
// init uploads params and runs the at-init subtask, forward computes through a replayed CUDA graph
// (captured once per set of pointers, re-reading fresh input memory), argument checks and init
// errors give the ABI's codes and texts, and graphs switched off run the work directly. Skips
// without a device.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_support.cuh"
#include "tiny_program.cuh"

// The C ABI of the graph-replaying variant, as a generated program exports it.
STITCH_PROGRAM_EXPORTS(stitch::kernels::tiny::TinyProgram<true>)

namespace stitch::kernels {
namespace {

using testing::DeviceBuffer;
using tiny::recorded_forwards;
using tiny::TinyProgram;

stitch_tensor tensor(void* data, std::vector<int64_t> shape) {
  stitch_tensor t{};
  t.data = data;
  t.dtype = STITCH_FLOAT32;
  t.rank = static_cast<int32_t>(shape.size());
  int64_t stride = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    t.shape[d] = shape[d];
    t.strides[d] = stride;
    stride *= shape[d];
  }
  return t;
}

class HostProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_GPU();
    ASSERT_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ASSERT_CUDA(scale_.allocate(4));
    ASSERT_CUDA(scale_.upload({1.0f, 2.0f, 3.0f, 4.0f}));
    ASSERT_CUDA(x_.allocate(8));
    ASSERT_CUDA(y_.allocate(8));
    ASSERT_CUDA(y2_.allocate(8));
    recorded_forwards = 0;
  }
  void TearDown() override {
    if (state_ != nullptr) stitch_destroy(state_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  void init() {
    const stitch_tensor params[1] = {tensor(scale_.data(), {4})};
    ASSERT_EQ(stitch_init(params, 1, &state_), STITCH_OK) << stitch_last_error(nullptr);
    ASSERT_NE(state_, nullptr);
  }
  int forward(DeviceBuffer<float>& y) {
    const stitch_tensor in[1] = {tensor(x_.data(), {2, 4})};
    stitch_tensor out[1] = {tensor(y.data(), {2, 4})};
    return stitch_forward(state_, in, 1, out, 1, stream_);
  }
  // y = x * 2 * scale + 1, scale = 1..4 along the last dim.
  static std::vector<float> expected(const std::vector<float>& x) {
    std::vector<float> y(x.size());
    for (size_t e = 0; e < x.size(); ++e) y[e] = x[e] * (2.0f * static_cast<float>(e % 4 + 1)) + 1.0f;
    return y;
  }

  cudaStream_t stream_ = nullptr;
  void* state_ = nullptr;
  DeviceBuffer<float> scale_, x_, y_, y2_;
};

TEST_F(HostProgramTest, InitThenForwardComputesAndReplaysTheGraph) {
  EXPECT_EQ(stitch_abi_version(), STITCH_ABI_VERSION);
  init();
  auto* s = static_cast<ProgramState<TinyProgram<true>>*>(state_);
  EXPECT_NE(s->reduce_scratch, nullptr) << "the reduction extent sizes a scratch in the arena";
  EXPECT_GE(s->arena.bytes(), 256 + Arena::align(reduce_workspace_bytes(1, 1 << 20, 1)));
  std::vector<float> x = {1, 2, 3, 4, -1, -2, -3, -4};
  for (int call = 0; call < 3; ++call) {
    for (float& v : x) v += 0.5f;  // fresh input each call: the replay must read it
    ASSERT_CUDA(x_.upload(x));
    ASSERT_EQ(forward(y_), STITCH_OK) << stitch_last_error(state_);
    ASSERT_CUDA(cudaStreamSynchronize(stream_));
    EXPECT_EQ(y_.download(), expected(x)) << "call " << call;
  }
  EXPECT_EQ(recorded_forwards, 1) << "captured once, replayed after";
  EXPECT_EQ(s->graphs.size(), 1);
  ASSERT_EQ(forward(y2_), STITCH_OK) << stitch_last_error(state_);
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  EXPECT_EQ(y2_.download(), expected(x));
  EXPECT_EQ(recorded_forwards, 2) << "another output pointer is another graph";
  EXPECT_EQ(s->graphs.size(), 2);
}

TEST_F(HostProgramTest, ForwardChecksItsArguments) {
  init();
  const stitch_tensor in[1] = {tensor(x_.data(), {2, 4})};
  stitch_tensor out[1] = {tensor(y_.data(), {2, 4})};
  EXPECT_EQ(stitch_forward(state_, in, 2, out, 1, stream_), STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(stitch_last_error(state_), "expected 1 inputs and 1 outputs");
  const stitch_tensor wrong_shape[1] = {tensor(x_.data(), {4, 2})};
  EXPECT_EQ(stitch_forward(state_, wrong_shape, 1, out, 1, stream_), STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(stitch_last_error(state_),
               "input 0: not the dtype/shape/contiguous layout this program was generated for");
  stitch_tensor wrong_dtype[1] = {tensor(y_.data(), {2, 4})};
  wrong_dtype[0].dtype = STITCH_INT32;
  EXPECT_EQ(stitch_forward(state_, in, 1, wrong_dtype, 1, stream_), STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(stitch_last_error(state_),
               "output 0: not the dtype/shape/contiguous layout this program was generated for");
  stitch_tensor strided[1] = {tensor(y_.data(), {2, 4})};
  strided[0].strides[0] = 8;
  EXPECT_EQ(stitch_forward(state_, in, 1, strided, 1, stream_), STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(recorded_forwards, 0) << "no work after a failed check";
}

TEST_F(HostProgramTest, AFailedInitLeavesItsTextAndNoState) {
  const stitch_tensor params[1] = {tensor(scale_.data(), {4})};
  void* state = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(stitch_init(params, 0, &state), STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(state, reinterpret_cast<void*>(0x1)) << "state is written only on success";
  EXPECT_STREQ(stitch_last_error(nullptr), "expected 1 params, got 0");
  const stitch_tensor wrong[1] = {tensor(scale_.data(), {2, 2})};
  EXPECT_EQ(stitch_init(wrong, 1, &state), STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(stitch_last_error(nullptr),
               "param 0: not the dtype/shape/contiguous layout this program was generated for");
  init();  // a later init succeeds and the init text stays for the null state
  EXPECT_STREQ(stitch_last_error(state_), "");
}

TEST_F(HostProgramTest, WithoutGraphsEveryForwardRunsDirectly) {
  using Direct = TinyProgram<false>;
  const stitch_tensor params[1] = {tensor(scale_.data(), {4})};
  void* state = nullptr;
  ASSERT_EQ(program_init<Direct>(params, 1, &state), STITCH_OK)
      << program_last_error<Direct>(nullptr);
  const std::vector<float> x = {0, 1, 2, 3, 4, 5, 6, 7};
  ASSERT_CUDA(x_.upload(x));
  const stitch_tensor in[1] = {tensor(x_.data(), {2, 4})};
  stitch_tensor out[1] = {tensor(y_.data(), {2, 4})};
  for (int call = 0; call < 2; ++call)
    ASSERT_EQ(program_forward<Direct>(state, in, 1, out, 1, stream_), STITCH_OK)
        << program_last_error<Direct>(state);
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  EXPECT_EQ(y_.download(), expected(x));
  EXPECT_EQ(recorded_forwards, 2);
  EXPECT_EQ(static_cast<ProgramState<Direct>*>(state)->graphs.size(), 0);
  program_destroy<Direct>(state);
}

TEST_F(HostProgramTest, TheLegacyDefaultStreamRunsDirectly) {
  init();
  ASSERT_CUDA(x_.upload(std::vector<float>(8, 1.0f)));
  const stitch_tensor in[1] = {tensor(x_.data(), {2, 4})};
  stitch_tensor out[1] = {tensor(y_.data(), {2, 4})};
  ASSERT_EQ(stitch_forward(state_, in, 1, out, 1, nullptr), STITCH_OK) << stitch_last_error(state_);
  ASSERT_EQ(stitch_forward(state_, in, 1, out, 1, nullptr), STITCH_OK) << stitch_last_error(state_);
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_EQ(y_.download(), expected(std::vector<float>(8, 1.0f)));
  EXPECT_EQ(recorded_forwards, 2) << "the default stream cannot be captured";
}

}  // namespace
}  // namespace stitch::kernels
