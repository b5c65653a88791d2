// Hand-written program for tests/tasks/mlp.py: a stack of Linear layers with ReLU between them
// (Linear → ReLU → … → Linear). Each layer is one cuBLASLt matmul with the bias (and ReLU, except
// on the last layer) fused as the epilogue. FP32 track: CUBLAS_COMPUTE_32F, so no TF32 tensor-core
// math. Params (graph.json order): weight0 [H0, IN], bias0 [H0], weight1 [H1, H0], bias1 [H1], ...
// Input: x [B, IN] float32 contiguous, any B. Output: [B, OUT].
//
// Layout: PyTorch's row-major W [out, in] is, read column-major, the matrix W^T [in, out];
// row-major x [B, in] is x^T [in, B]. cuBLASLt computes D = op(A) op(B) column-major, so with A = W
// (transposed) and B = x^T, D = W x^T = y^T [out, B] column-major, which is y [B, out] row-major.
// The bias is a vector over D's rows (= output features), which is what CUBLASLT_EPILOGUE_BIAS
// adds.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "program_support.h"

#define STITCH_CUBLAS_CHECK(call)                                                            \
  do {                                                                                       \
    cublasStatus_t stitch_status_ = (call);                                                  \
    if (stitch_status_ != CUBLAS_STATUS_SUCCESS)                                             \
      return ::stitch_program::fail(                                                         \
          error_sink, STITCH_ERROR_LIBRARY, "%s:%d: %s failed: %s (%d)", __FILE__, __LINE__, \
          #call, cublasLtGetStatusString(stitch_status_), static_cast<int>(stitch_status_)); \
  } while (0)

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;  // cuBLASLt's recommendation for Hopper

struct Layer {
  float* weight = nullptr;  // [out, in], row-major
  float* bias = nullptr;    // [out]
  int64_t in = 0;
  int64_t out = 0;
  cublasLtMatmulDesc_t desc = nullptr;        // transa = T, epilogue (RELU_)BIAS, bias pointer
  cublasLtMatrixLayout_t a_layout = nullptr;  // W viewed column-major: [in, out], ld = in
  // Per batch size (rebuilt when B changes): the x^T and y^T layouts and the chosen algorithm.
  cublasLtMatrixLayout_t b_layout = nullptr;
  cublasLtMatrixLayout_t d_layout = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

struct State {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  std::vector<Layer> layers;
  // What the layouts and algorithms were chosen for: batch size and the alignment (bytes) of the
  // caller's input and output pointers, which need not be 256-byte aligned (IPC sub-allocations).
  int64_t planned_batch = -1;
  int planned_input_alignment = 0;
  int planned_output_alignment = 0;
  // Ping-pong buffers for hidden activations, sized for planned_batch.
  float* hidden[2] = {nullptr, nullptr};
  int64_t hidden_capacity = 0;  // elements per buffer
  std::string error;
};

// Largest power of two (up to 256) dividing the address: what cuBLASLt may assume of a pointer.
int pointer_alignment(const void* p) {
  uintptr_t address = reinterpret_cast<uintptr_t>(p);
  int alignment = 256;
  while (alignment > 1 && address % alignment != 0)
    alignment /= 2;
  return alignment;
}

void release(State* state) {
  if (!state) return;
  for (Layer& layer : state->layers) {
    cudaFree(layer.weight);
    cudaFree(layer.bias);
    if (layer.desc) cublasLtMatmulDescDestroy(layer.desc);
    if (layer.a_layout) cublasLtMatrixLayoutDestroy(layer.a_layout);
    if (layer.b_layout) cublasLtMatrixLayoutDestroy(layer.b_layout);
    if (layer.d_layout) cublasLtMatrixLayoutDestroy(layer.d_layout);
  }
  cudaFree(state->hidden[0]);
  cudaFree(state->hidden[1]);
  cudaFree(state->workspace);
  if (state->handle) cublasLtDestroy(state->handle);
  delete state;
}

int describe_layer(std::string* error_sink, Layer& layer, bool relu) {
  STITCH_CUBLAS_CHECK(cublasLtMatmulDescCreate(&layer.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t transpose = CUBLAS_OP_T;
  cublasOperation_t keep = CUBLAS_OP_N;
  STITCH_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(layer.desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                                     &transpose, sizeof(transpose)));
  STITCH_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(layer.desc, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof(keep)));
  cublasLtEpilogue_t epilogue = relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  STITCH_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(layer.desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                     &epilogue, sizeof(epilogue)));
  const float* bias = layer.bias;
  STITCH_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(layer.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                     &bias, sizeof(bias)));
  STITCH_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&layer.a_layout, CUDA_R_32F, layer.in, layer.out, layer.in));
  return STITCH_OK;
}

// Chooses layouts, algorithms and hidden buffers for batch size `batch`. Runs on the first call
// and whenever the batch size changes, so a steady-state forward does no host-side planning.
int plan_for_batch(State* state, int64_t batch, int input_alignment, int output_alignment) {
  std::string* error_sink = &state->error;
  int64_t widest_hidden = 0;
  for (size_t i = 0; i + 1 < state->layers.size(); ++i)
    if (state->layers[i].out > widest_hidden) widest_hidden = state->layers[i].out;
  if (batch * widest_hidden > state->hidden_capacity) {
    cudaFree(state->hidden[0]);
    cudaFree(state->hidden[1]);
    state->hidden[0] = state->hidden[1] = nullptr;
    state->hidden_capacity = 0;
    size_t bytes = static_cast<size_t>(batch * widest_hidden) * sizeof(float);
    STITCH_CUDA_CHECK(cudaMalloc(&state->hidden[0], bytes));
    STITCH_CUDA_CHECK(cudaMalloc(&state->hidden[1], bytes));
    state->hidden_capacity = batch * widest_hidden;
  }

  cublasLtMatmulPreference_t preference = nullptr;
  STITCH_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  size_t workspace_bytes = kWorkspaceBytes;
  cublasStatus_t status =
      cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                           &workspace_bytes, sizeof(workspace_bytes));
  int result = STITCH_OK;
  for (size_t l = 0; l < state->layers.size(); ++l) {
    Layer& layer = state->layers[l];
    if (status != CUBLAS_STATUS_SUCCESS) break;
    // Hidden buffers come from cudaMalloc (256-byte aligned); only the caller's may be less.
    uint32_t b_alignment = l == 0 ? input_alignment : 256;
    uint32_t d_alignment = l + 1 == state->layers.size() ? output_alignment : 256;
    status = cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &b_alignment, sizeof(b_alignment));
    if (status != CUBLAS_STATUS_SUCCESS) break;
    status = cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &d_alignment, sizeof(d_alignment));
    if (status != CUBLAS_STATUS_SUCCESS) break;
    status = cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &d_alignment, sizeof(d_alignment));
    if (status != CUBLAS_STATUS_SUCCESS) break;
    if (layer.b_layout) cublasLtMatrixLayoutDestroy(layer.b_layout);
    if (layer.d_layout) cublasLtMatrixLayoutDestroy(layer.d_layout);
    layer.b_layout = layer.d_layout = nullptr;
    status = cublasLtMatrixLayoutCreate(&layer.b_layout, CUDA_R_32F, layer.in, batch, layer.in);
    if (status != CUBLAS_STATUS_SUCCESS) break;
    status = cublasLtMatrixLayoutCreate(&layer.d_layout, CUDA_R_32F, layer.out, batch, layer.out);
    if (status != CUBLAS_STATUS_SUCCESS) break;
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    status = cublasLtMatmulAlgoGetHeuristic(state->handle, layer.desc, layer.a_layout,
                                            layer.b_layout, layer.d_layout, layer.d_layout,
                                            preference, 1, &heuristic, &found);
    if (status != CUBLAS_STATUS_SUCCESS) break;
    if (found == 0) {
      result =
          stitch_program::fail(error_sink, STITCH_ERROR_LIBRARY,
                               "cuBLASLt has no FP32 algorithm for a %lldx%lldx%lld layer",
                               static_cast<long long>(layer.out), static_cast<long long>(batch),
                               static_cast<long long>(layer.in));
      break;
    }
    layer.algo = heuristic.algo;
  }
  cublasLtMatmulPreferenceDestroy(preference);
  if (result != STITCH_OK) return result;
  STITCH_CUBLAS_CHECK(status);
  state->planned_batch = batch;
  state->planned_input_alignment = input_alignment;
  state->planned_output_alignment = output_alignment;
  return STITCH_OK;
}

int run_forward(State* state, const stitch_tensor& input, stitch_tensor& output,
                cudaStream_t stream) {
  std::string* error_sink = &state->error;
  const Layer& first = state->layers.front();
  const Layer& last = state->layers.back();
  STITCH_TRY_STATUS(stitch_program::check_float_tensor(error_sink, input, "input x", 2));
  STITCH_TRY_STATUS(stitch_program::check_float_tensor(error_sink, output, "output", 2));
  int64_t batch = input.shape[0];
  if (input.shape[1] != first.in)
    return stitch_program::fail(
        error_sink, STITCH_ERROR_INVALID_ARGUMENT, "input x: %lld features, expected %lld",
        static_cast<long long>(input.shape[1]), static_cast<long long>(first.in));
  if (output.shape[0] != batch || output.shape[1] != last.out)
    return stitch_program::fail(error_sink, STITCH_ERROR_INVALID_ARGUMENT,
                                "output: shape [%lld, %lld], expected [%lld, %lld]",
                                static_cast<long long>(output.shape[0]),
                                static_cast<long long>(output.shape[1]),
                                static_cast<long long>(batch), static_cast<long long>(last.out));
  if (batch == 0) return STITCH_OK;
  int input_alignment = pointer_alignment(input.data);
  int output_alignment = pointer_alignment(output.data);
  if (batch != state->planned_batch || input_alignment != state->planned_input_alignment ||
      output_alignment != state->planned_output_alignment)
    STITCH_TRY_STATUS(plan_for_batch(state, batch, input_alignment, output_alignment));

  const float alpha = 1.0f;
  const float beta = 0.0f;
  const float* source = static_cast<const float*>(input.data);
  for (size_t i = 0; i < state->layers.size(); ++i) {
    const Layer& layer = state->layers[i];
    bool is_last = i + 1 == state->layers.size();
    float* destination = is_last ? static_cast<float*>(output.data) : state->hidden[i % 2];
    STITCH_CUBLAS_CHECK(cublasLtMatmul(state->handle, layer.desc, &alpha, layer.weight,
                                       layer.a_layout, source, layer.b_layout, &beta, destination,
                                       layer.d_layout, destination, layer.d_layout, &layer.algo,
                                       state->workspace, kWorkspaceBytes, stream));
    source = destination;
  }
  STITCH_LAUNCH_CHECK();
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
  if (params == nullptr || n_params < 2 || n_params % 2 != 0)
    return stitch_program::fail(error_sink, STITCH_ERROR_INVALID_ARGUMENT,
                                "expected (weight, bias) pairs, got %d params", n_params);
  for (int i = 0; i < n_params; i += 2) {
    STITCH_TRY_STATUS(stitch_program::check_float_tensor(error_sink, params[i], "weight", 2));
    STITCH_TRY_STATUS(stitch_program::check_float_tensor(error_sink, params[i + 1], "bias", 1));
    if (params[i + 1].shape[0] != params[i].shape[0])
      return stitch_program::fail(error_sink, STITCH_ERROR_INVALID_ARGUMENT,
                                  "param %d: bias length %lld != weight rows %lld", i + 1,
                                  static_cast<long long>(params[i + 1].shape[0]),
                                  static_cast<long long>(params[i].shape[0]));
    if (i > 0 && params[i].shape[1] != params[i - 2].shape[0])
      return stitch_program::fail(error_sink, STITCH_ERROR_INVALID_ARGUMENT,
                                  "param %d: weight takes %lld features, previous layer gives %lld",
                                  i, static_cast<long long>(params[i].shape[1]),
                                  static_cast<long long>(params[i - 2].shape[0]));
  }

  State* state = new State;
  auto init = [&]() -> int {
    STITCH_CUBLAS_CHECK(cublasLtCreate(&state->handle));
    STITCH_CUDA_CHECK(cudaMalloc(&state->workspace, kWorkspaceBytes));
    state->layers.resize(n_params / 2);
    for (size_t l = 0; l < state->layers.size(); ++l) {
      Layer& layer = state->layers[l];
      const stitch_tensor& weight = params[2 * l];
      layer.out = weight.shape[0];
      layer.in = weight.shape[1];
      STITCH_TRY_STATUS(stitch_program::copy_to_owned(error_sink, weight, &layer.weight));
      STITCH_TRY_STATUS(stitch_program::copy_to_owned(error_sink, params[2 * l + 1], &layer.bias));
      STITCH_TRY_STATUS(describe_layer(error_sink, layer, l + 1 < state->layers.size()));
    }
    return STITCH_OK;
  };
  int status = init();
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
