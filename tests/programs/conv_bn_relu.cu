// Hand-written program for tests/tasks/conv_bn_relu.py: Conv2d (stride 1, padding k/2, as the task
// builds it) → BatchNorm2d in training mode (batch statistics, biased variance, eps 1e-5) → ReLU.
// The convolution is cuDNN's legacy cudnnConvolutionForward with FMA math only (FP32 track: no
// TF32). Then two small kernels: per-channel statistics, reduced in a fixed order so the result is
// bit-reproducible, and one pass that normalises, applies gamma/beta and ReLU.
// Params (graph.json order, checked with torch.export): conv.weight [C, Cin, k, k], conv.bias [C],
// bn.weight [C], bn.bias [C], bn.running_mean [C], bn.running_var [C], bn.num_batches_tracked []
// (int64). Input: x [N, Cin, H, W] float32 contiguous, any N, H, W. Output: [N, C, H, W].
//
// Two things the reference does that this program need not: the conv bias is added to every element
// of a channel and then subtracted again with that channel's batch mean, so it cancels exactly and
// is never read; and the running statistics are updated by a training-mode forward but are not
// outputs.
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdint>
#include <string>

#include "program_support.h"

#define STITCH_CUDNN_CHECK(call)                                                              \
  do {                                                                                        \
    cudnnStatus_t stitch_status_ = (call);                                                    \
    if (stitch_status_ != CUDNN_STATUS_SUCCESS)                                               \
      return ::stitch_program::fail(error_sink, STITCH_ERROR_LIBRARY, "%s:%d: %s failed: %s", \
                                    __FILE__, __LINE__, #call,                                \
                                    cudnnGetErrorString(stitch_status_));                     \
  } while (0)

namespace {

constexpr double kEpsilon = 1e-5;
constexpr int kStatsThreads = 256;
constexpr int kMaxSplits = 64;  // partial sums per channel

struct State {
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x_desc = nullptr;
  cudnnTensorDescriptor_t y_desc = nullptr;
  cudnnFilterDescriptor_t w_desc = nullptr;
  cudnnConvolutionDescriptor_t conv_desc = nullptr;
  float* weight = nullptr;  // [C, Cin, k, k]
  float* gamma = nullptr;   // bn.weight [C]
  float* beta = nullptr;    // bn.bias [C]
  int64_t out_channels = 0, in_channels = 0, kernel_h = 0, kernel_w = 0;
  int sm_count = 1;
  // Chosen for planned_shape (rebuilt when N, H or W change).
  int64_t planned_shape[4] = {-1, -1, -1, -1};
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  int splits = 1;  // blocks per channel in the statistics kernel
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  float* conv_out = nullptr;        // [N, C, H, W]
  size_t conv_out_capacity = 0;     // elements
  double* partials = nullptr;       // [C, kMaxSplits, 2]: sum and sum of squares
  float* channel_affine = nullptr;  // [C, 3]: batch mean, gamma / sqrt(var + eps), beta
  std::string error;
};

// Block (c, s) sums its share of channel c in double and writes one partial (sum, sum of squares).
// Double accumulation keeps E[x^2] - E[x]^2 accurate for FP32 data; no atomics, so the sums do not
// depend on scheduling and two runs give identical bits.
__global__ void channel_partial_sums(const float* __restrict__ y, int64_t batch, int64_t channels,
                                     int64_t plane, int splits, double* __restrict__ partials) {
  int c = blockIdx.x;
  int s = blockIdx.y;
  int64_t count = batch * plane;
  double sum = 0.0, sum_sq = 0.0;
  for (int64_t i = static_cast<int64_t>(s) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(splits) * blockDim.x) {
    int64_t n = i / plane;
    int64_t p = i - n * plane;
    double v = y[(n * channels + c) * plane + p];
    sum += v;
    sum_sq += v * v;
  }
  __shared__ double shared_sum[kStatsThreads];
  __shared__ double shared_sq[kStatsThreads];
  shared_sum[threadIdx.x] = sum;
  shared_sq[threadIdx.x] = sum_sq;
  __syncthreads();
  for (int width = blockDim.x / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) {
      shared_sum[threadIdx.x] += shared_sum[threadIdx.x + width];
      shared_sq[threadIdx.x] += shared_sq[threadIdx.x + width];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partials[(static_cast<int64_t>(c) * kMaxSplits + s) * 2] = shared_sum[0];
    partials[(static_cast<int64_t>(c) * kMaxSplits + s) * 2 + 1] = shared_sq[0];
  }
}

// One thread per channel: folds the partials (in order) into the mean and gamma / sqrt(var + eps),
// with the biased variance as training-mode BatchNorm uses.
__global__ void channel_affine_from_sums(const double* __restrict__ partials, int splits,
                                         int64_t channels, int64_t count,
                                         const float* __restrict__ gamma,
                                         const float* __restrict__ beta,
                                         float* __restrict__ affine) {
  int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  double sum = 0.0, sum_sq = 0.0;
  for (int s = 0; s < splits; ++s) {
    sum += partials[(c * kMaxSplits + s) * 2];
    sum_sq += partials[(c * kMaxSplits + s) * 2 + 1];
  }
  double mean = sum / static_cast<double>(count);
  double variance = sum_sq / static_cast<double>(count) - mean * mean;
  if (variance < 0.0) variance = 0.0;
  double scale = static_cast<double>(gamma[c]) / sqrt(variance + kEpsilon);
  affine[3 * c] = static_cast<float>(mean);
  affine[3 * c + 1] = static_cast<float>(scale);
  affine[3 * c + 2] = beta[c];
}

__device__ __forceinline__ float relu(float v) {
  return v < 0.0f ? 0.0f : v;
}

// (y - mean) * scale + beta, in the reference's order: folding the mean into the offset would
// cancel catastrophically for channels whose mean is large against their spread.
__global__ void normalize_relu(const float* __restrict__ y, const float* __restrict__ affine,
                               float* __restrict__ out, int64_t count, int64_t channels,
                               int64_t plane) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    int64_t c = (i / plane) % channels;
    out[i] = relu(fmaf(y[i] - affine[3 * c], affine[3 * c + 1], affine[3 * c + 2]));
  }
}

void release(State* state) {
  if (!state) return;
  if (state->x_desc) cudnnDestroyTensorDescriptor(state->x_desc);
  if (state->y_desc) cudnnDestroyTensorDescriptor(state->y_desc);
  if (state->w_desc) cudnnDestroyFilterDescriptor(state->w_desc);
  if (state->conv_desc) cudnnDestroyConvolutionDescriptor(state->conv_desc);
  if (state->handle) cudnnDestroy(state->handle);
  cudaFree(state->weight);
  cudaFree(state->gamma);
  cudaFree(state->beta);
  cudaFree(state->workspace);
  cudaFree(state->conv_out);
  cudaFree(state->partials);
  cudaFree(state->channel_affine);
  delete state;
}

// Sets descriptors, picks an FMA-only algorithm and sizes buffers for input shape [n, cin, h, w].
int plan_for_shape(State* state, const int64_t* shape) {
  std::string* error_sink = &state->error;
  int n = static_cast<int>(shape[0]), h = static_cast<int>(shape[2]),
      w = static_cast<int>(shape[3]);
  STITCH_CUDNN_CHECK(cudnnSetTensor4dDescriptor(state->x_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                n, static_cast<int>(state->in_channels), h, w));
  int on = 0, oc = 0, oh = 0, ow = 0;
  STITCH_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(state->conv_desc, state->x_desc,
                                                           state->w_desc, &on, &oc, &oh, &ow));
  if (on != n || oh != h || ow != w || oc != state->out_channels)
    return stitch_program::fail(error_sink, STITCH_ERROR_INTERNAL,
                                "convolution output [%d, %d, %d, %d] is not [N, C, H, W]", on, oc,
                                oh, ow);
  STITCH_CUDNN_CHECK(cudnnSetTensor4dDescriptor(state->y_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                on, oc, oh, ow));

  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  STITCH_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
      state->handle, state->x_desc, state->w_desc, state->conv_desc, state->y_desc,
      CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
  // The heuristic ranks algorithms; take the best that runs in FMA math (no TF32 on the fp32
  // track).
  int chosen = -1;
  for (int i = 0; i < returned && chosen < 0; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].mathType == CUDNN_FMA_MATH) chosen = i;
  if (chosen < 0)
    return stitch_program::fail(error_sink, STITCH_ERROR_LIBRARY,
                                "cuDNN offers no FMA-math algorithm for this convolution");
  state->algo = perf[chosen].algo;
  size_t workspace_bytes = 0;
  STITCH_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
      state->handle, state->x_desc, state->w_desc, state->conv_desc, state->y_desc, state->algo,
      &workspace_bytes));
  if (workspace_bytes > state->workspace_bytes) {
    cudaFree(state->workspace);
    state->workspace = nullptr;
    state->workspace_bytes = 0;
    STITCH_CUDA_CHECK(cudaMalloc(&state->workspace, workspace_bytes));
    state->workspace_bytes = workspace_bytes;
  }
  size_t elements = static_cast<size_t>(on) * oc * oh * ow;
  if (elements > state->conv_out_capacity) {
    cudaFree(state->conv_out);
    state->conv_out = nullptr;
    state->conv_out_capacity = 0;
    STITCH_CUDA_CHECK(cudaMalloc(&state->conv_out, elements * sizeof(float)));
    state->conv_out_capacity = elements;
  }
  // About four blocks per SM in all, at least a few thousand elements per block.
  int64_t per_channel = static_cast<int64_t>(on) * oh * ow;
  int64_t splits = (4 * static_cast<int64_t>(state->sm_count) + oc - 1) / oc;
  int64_t useful = (per_channel + 4 * kStatsThreads - 1) / (4 * kStatsThreads);
  if (splits > useful) splits = useful;
  if (splits > kMaxSplits) splits = kMaxSplits;
  state->splits = splits < 1 ? 1 : static_cast<int>(splits);
  for (int i = 0; i < 4; ++i)
    state->planned_shape[i] = shape[i];
  return STITCH_OK;
}

int run_forward(State* state, const stitch_tensor& input, stitch_tensor& output,
                cudaStream_t stream) {
  std::string* error_sink = &state->error;
  STITCH_TRY_STATUS(stitch_program::check_float_tensor(error_sink, input, "input x", 4));
  STITCH_TRY_STATUS(stitch_program::check_float_tensor(error_sink, output, "output", 4));
  if (input.shape[1] != state->in_channels)
    return stitch_program::fail(
        error_sink, STITCH_ERROR_INVALID_ARGUMENT, "input x: %lld channels, expected %lld",
        static_cast<long long>(input.shape[1]), static_cast<long long>(state->in_channels));
  int64_t expected[4] = {input.shape[0], state->out_channels, input.shape[2], input.shape[3]};
  for (int i = 0; i < 4; ++i)
    if (output.shape[i] != expected[i])
      return stitch_program::fail(
          error_sink, STITCH_ERROR_INVALID_ARGUMENT, "output: dim %d is %lld, expected %lld", i,
          static_cast<long long>(output.shape[i]), static_cast<long long>(expected[i]));
  int64_t count = stitch_program::element_count(output);
  if (count == 0) return STITCH_OK;
  bool same_shape = true;
  for (int i = 0; i < 4; ++i)
    same_shape = same_shape && input.shape[i] == state->planned_shape[i];
  if (!same_shape) STITCH_TRY_STATUS(plan_for_shape(state, input.shape));

  STITCH_CUDNN_CHECK(cudnnSetStream(state->handle, stream));
  const float one = 1.0f, zero = 0.0f;
  STITCH_CUDNN_CHECK(cudnnConvolutionForward(state->handle, &one, state->x_desc, input.data,
                                             state->w_desc, state->weight, state->conv_desc,
                                             state->algo, state->workspace, state->workspace_bytes,
                                             &zero, state->y_desc, state->conv_out));
  int64_t channels = state->out_channels;
  int64_t plane = expected[2] * expected[3];
  dim3 stats_grid(static_cast<unsigned>(channels), static_cast<unsigned>(state->splits));
  channel_partial_sums<<<stats_grid, kStatsThreads, 0, stream>>>(
      state->conv_out, expected[0], channels, plane, state->splits, state->partials);
  STITCH_LAUNCH_CHECK();
  channel_affine_from_sums<<<static_cast<unsigned>((channels + 127) / 128), 128, 0, stream>>>(
      state->partials, state->splits, channels, expected[0] * plane, state->gamma, state->beta,
      state->channel_affine);
  STITCH_LAUNCH_CHECK();
  int64_t blocks = (count + 255) / 256;
  int64_t max_blocks = static_cast<int64_t>(state->sm_count) * 16;
  normalize_relu<<<static_cast<unsigned>(blocks < max_blocks ? blocks : max_blocks), 256, 0,
                   stream>>>(state->conv_out, state->channel_affine,
                             static_cast<float*>(output.data), count, channels, plane);
  STITCH_LAUNCH_CHECK();
  return STITCH_OK;
}

int initialise(State* state, const stitch_tensor* params, std::string* error_sink) {
  const stitch_tensor& weight = params[0];
  state->out_channels = weight.shape[0];
  state->in_channels = weight.shape[1];
  state->kernel_h = weight.shape[2];
  state->kernel_w = weight.shape[3];
  int device = 0;
  STITCH_CUDA_CHECK(cudaGetDevice(&device));
  STITCH_CUDA_CHECK(
      cudaDeviceGetAttribute(&state->sm_count, cudaDevAttrMultiProcessorCount, device));
  STITCH_TRY_STATUS(stitch_program::copy_to_owned(error_sink, weight, &state->weight));
  STITCH_TRY_STATUS(stitch_program::copy_to_owned(error_sink, params[2], &state->gamma));
  STITCH_TRY_STATUS(stitch_program::copy_to_owned(error_sink, params[3], &state->beta));
  STITCH_CUDA_CHECK(cudaMalloc(&state->partials, static_cast<size_t>(state->out_channels) *
                                                     kMaxSplits * 2 * sizeof(double)));
  STITCH_CUDA_CHECK(cudaMalloc(&state->channel_affine,
                               static_cast<size_t>(state->out_channels) * 3 * sizeof(float)));

  STITCH_CUDNN_CHECK(cudnnCreate(&state->handle));
  STITCH_CUDNN_CHECK(cudnnCreateTensorDescriptor(&state->x_desc));
  STITCH_CUDNN_CHECK(cudnnCreateTensorDescriptor(&state->y_desc));
  STITCH_CUDNN_CHECK(cudnnCreateFilterDescriptor(&state->w_desc));
  STITCH_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&state->conv_desc));
  STITCH_CUDNN_CHECK(cudnnSetFilter4dDescriptor(
      state->w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, static_cast<int>(state->out_channels),
      static_cast<int>(state->in_channels), static_cast<int>(state->kernel_h),
      static_cast<int>(state->kernel_w)));
  // The task's nn.Conv2d: stride 1, dilation 1, padding kernel_size // 2; cross-correlation as in
  // PyTorch.
  STITCH_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(state->conv_desc,
                                                     static_cast<int>(state->kernel_h / 2),
                                                     static_cast<int>(state->kernel_w / 2), 1, 1, 1,
                                                     1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  STITCH_CUDNN_CHECK(cudnnSetConvolutionMathType(state->conv_desc, CUDNN_FMA_MATH));
  return STITCH_OK;
}

}  // namespace

extern "C" {

int stitch_abi_version(void) {
  return STITCH_ABI_VERSION;
}

int stitch_init(const stitch_tensor* params, int n_params, void** state_out) {
  std::string* error_sink = &stitch_program::init_error();
  if (state_out == nullptr)
    return stitch_program::fail(error_sink, STITCH_ERROR_INVALID_ARGUMENT, "state is null");
  if (params == nullptr || n_params != 7)
    return stitch_program::fail(error_sink, STITCH_ERROR_INVALID_ARGUMENT,
                                "expected 7 params (conv.weight, conv.bias, bn.weight, bn.bias, "
                                "bn.running_mean, bn.running_var, bn.num_batches_tracked), got %d",
                                n_params);
  STITCH_TRY_STATUS(stitch_program::check_float_tensor(error_sink, params[0], "conv.weight", 4));
  const char* names[] = {"conv.bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"};
  for (int i = 1; i <= 5; ++i) {
    STITCH_TRY_STATUS(stitch_program::check_float_tensor(error_sink, params[i], names[i - 1], 1));
    if (params[i].shape[0] != params[0].shape[0])
      return stitch_program::fail(error_sink, STITCH_ERROR_INVALID_ARGUMENT,
                                  "%s: length %lld, expected %lld channels", names[i - 1],
                                  static_cast<long long>(params[i].shape[0]),
                                  static_cast<long long>(params[0].shape[0]));
  }
  if (params[0].shape[2] % 2 == 0 || params[0].shape[3] % 2 == 0)
    return stitch_program::fail(error_sink, STITCH_ERROR_INVALID_ARGUMENT,
                                "conv.weight: odd kernel sizes expected (padding k/2 keeps H, W)");
  State* state = new State;
  int status = initialise(state, params, error_sink);
  if (status != STITCH_OK) {
    release(state);
    return status;
  }
  *state_out = state;
  return STITCH_OK;
}

int stitch_forward(void* state_ptr, const stitch_tensor* inputs, int n_inputs,
                   stitch_tensor* outputs, int n_outputs, void* stream) {
  State* state = static_cast<State*>(state_ptr);
  if (state == nullptr) return STITCH_ERROR_INVALID_ARGUMENT;
  if (n_inputs != 1 || n_outputs != 1 || inputs == nullptr || outputs == nullptr)
    return stitch_program::fail(&state->error, STITCH_ERROR_INVALID_ARGUMENT,
                                "expected 1 input and 1 output, got %d and %d", n_inputs,
                                n_outputs);
  return run_forward(state, inputs[0], outputs[0], static_cast<cudaStream_t>(stream));
}

void stitch_destroy(void* state) {
  release(static_cast<State*>(state));
}

const char* stitch_last_error(void* state) {
  if (state == nullptr) return stitch_program::init_error().c_str();
  return static_cast<State*>(state)->error.c_str();
}

}  // extern "C"
