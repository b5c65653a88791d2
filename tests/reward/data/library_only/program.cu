// Fixture: the whole forward as one cuBLASLt matmul with the bias and ReLU in its epilogue; no
// kernel of its own.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include "stitch/program.h"

struct State {
  cublasLtHandle_t handle;
  cublasLtMatmulDesc_t desc;
  const float* weight;
  const float* bias;
};

static int forward(State* s, const float* x, float* y, cudaStream_t stream) {
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_RELU_BIAS;
  cublasLtMatmulDescSetAttribute(s->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                 sizeof(epilogue));
  cublasLtMatmulDescSetAttribute(s->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &s->bias,
                                 sizeof(s->bias));
  const float alpha = 1.0f, beta = 0.0f;
  return cublasLtMatmul(s->handle, s->desc, &alpha, s->weight, nullptr, x, nullptr, &beta, y,
                        nullptr, y, nullptr, nullptr, nullptr, 0, stream);
}
