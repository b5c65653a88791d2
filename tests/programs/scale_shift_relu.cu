// Hand-written program for tests/tasks/scale_shift_relu.py: y = relu(x * scale + shift), with
// scale and shift broadcast along the last dimension of x. One elementwise kernel; float4 accesses
// when the feature count and pointers allow, scalar otherwise. Params (graph.json order): scale
// [F], shift [F]. Input: x [..., F] float32, contiguous. Output: same shape as x.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "program_support.h"

namespace {

struct State {
  float* scale = nullptr;
  float* shift = nullptr;
  int64_t features = 0;
  int sm_count = 1;
  std::string error;
};

// NaN propagates like torch.relu (fmaxf would turn it into 0 and hide a broken input).
__device__ __forceinline__ float relu(float v) {
  return v < 0.0f ? 0.0f : v;
}

__global__ void scale_shift_relu_scalar(const float* __restrict__ x,
                                        const float* __restrict__ scale,
                                        const float* __restrict__ shift, float* __restrict__ y,
                                        int64_t count, int64_t features) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    int64_t column = i % features;
    y[i] = relu(__fadd_rn(__fmul_rn(x[i], scale[column]), shift[column]));
  }
}

// features % 4 == 0 and 16-byte aligned pointers: each thread handles 4 consecutive columns.
__global__ void scale_shift_relu_vec4(const float4* __restrict__ x,
                                      const float4* __restrict__ scale,
                                      const float4* __restrict__ shift, float4* __restrict__ y,
                                      int64_t count4, int64_t features4) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count4;
       i += stride) {
    int64_t column = i % features4;
    float4 v = x[i];
    float4 s = scale[column];
    float4 b = shift[column];
    // Multiply then add, not fma: the reference rounds x * scale before adding shift.
    float4 r;
    r.x = relu(__fadd_rn(__fmul_rn(v.x, s.x), b.x));
    r.y = relu(__fadd_rn(__fmul_rn(v.y, s.y), b.y));
    r.z = relu(__fadd_rn(__fmul_rn(v.z, s.z), b.z));
    r.w = relu(__fadd_rn(__fmul_rn(v.w, s.w), b.w));
    y[i] = r;
  }
}

bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

int launch(State* state, const stitch_tensor& input, stitch_tensor& output, cudaStream_t stream) {
  std::string* error_sink = &state->error;
  STITCH_TRY_STATUS(stitch_program::check_float_tensor(error_sink, input, "input x", -1));
  STITCH_TRY_STATUS(stitch_program::check_float_tensor(error_sink, output, "output", -1));
  if (input.rank < 1 || input.shape[input.rank - 1] != state->features)
    return stitch_program::fail(error_sink, STITCH_ERROR_INVALID_ARGUMENT,
                                "input x: last dimension must be %lld",
                                static_cast<long long>(state->features));
  if (output.rank != input.rank)
    return stitch_program::fail(error_sink, STITCH_ERROR_INVALID_ARGUMENT,
                                "output rank %d differs from input rank %d", output.rank,
                                input.rank);
  for (int i = 0; i < input.rank; ++i)
    if (output.shape[i] != input.shape[i])
      return stitch_program::fail(error_sink, STITCH_ERROR_INVALID_ARGUMENT,
                                  "output shape differs from input shape at dim %d", i);
  int64_t count = stitch_program::element_count(input);
  if (count == 0) return STITCH_OK;

  const float* x = static_cast<const float*>(input.data);
  float* y = static_cast<float*>(output.data);
  const int threads = 256;
  // Enough blocks to fill the GPU several times over; the grid-stride loop covers the rest.
  const int64_t max_blocks = static_cast<int64_t>(state->sm_count) * 16;
  bool vectorizable = state->features % 4 == 0 && aligned16(x) && aligned16(y) &&
                      aligned16(state->scale) && aligned16(state->shift);
  if (vectorizable) {
    int64_t count4 = count / 4;
    int64_t blocks = (count4 + threads - 1) / threads;
    scale_shift_relu_vec4<<<static_cast<unsigned>(blocks < max_blocks ? blocks : max_blocks),
                            threads, 0, stream>>>(
        reinterpret_cast<const float4*>(x), reinterpret_cast<const float4*>(state->scale),
        reinterpret_cast<const float4*>(state->shift), reinterpret_cast<float4*>(y), count4,
        state->features / 4);
  } else {
    int64_t blocks = (count + threads - 1) / threads;
    scale_shift_relu_scalar<<<static_cast<unsigned>(blocks < max_blocks ? blocks : max_blocks),
                              threads, 0, stream>>>(x, state->scale, state->shift, y, count,
                                                    state->features);
  }
  STITCH_LAUNCH_CHECK();
  return STITCH_OK;
}

void release(State* state) {
  if (!state) return;
  cudaFree(state->scale);
  cudaFree(state->shift);
  delete state;
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
  if (n_params != 2 || params == nullptr)
    return stitch_program::fail(error_sink, STITCH_ERROR_INVALID_ARGUMENT,
                                "expected 2 params (scale, shift), got %d", n_params);
  STITCH_TRY_STATUS(stitch_program::check_float_tensor(error_sink, params[0], "scale", 1));
  STITCH_TRY_STATUS(stitch_program::check_float_tensor(error_sink, params[1], "shift", 1));
  if (params[0].shape[0] != params[1].shape[0] || params[0].shape[0] < 1)
    return stitch_program::fail(error_sink, STITCH_ERROR_INVALID_ARGUMENT,
                                "scale and shift must have the same non-zero length");
  State* state = new State;
  state->features = params[0].shape[0];
  int device = 0;
  int status = STITCH_OK;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&state->sm_count, cudaDevAttrMultiProcessorCount, device) !=
          cudaSuccess)
    status = stitch_program::fail(error_sink, STITCH_ERROR_CUDA, "cannot query the device: %s",
                                  cudaGetErrorString(cudaGetLastError()));
  if (status == STITCH_OK)
    status = stitch_program::copy_to_owned(error_sink, params[0], &state->scale);
  if (status == STITCH_OK)
    status = stitch_program::copy_to_owned(error_sink, params[1], &state->shift);
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
  return launch(state, inputs[0], outputs[0], static_cast<cudaStream_t>(stream));
}

void stitch_destroy(void* state) {
  release(static_cast<State*>(state));
}

const char* stitch_last_error(void* state) {
  if (state == nullptr) return stitch_program::init_error().c_str();
  return static_cast<State*>(state)->error.c_str();
}

}  // extern "C"
