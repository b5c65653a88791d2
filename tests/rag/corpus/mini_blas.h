/* A small header in the style of the CUDA libraries, for the retrieval tests. */
#pragma once

#define MINIBLAS_VERSION_MAJOR 3
#define MINIBLAS_CHECK(call) \
  do {                       \
    (void)(call);            \
  } while (0)

typedef struct miniblasContext* miniblasHandle_t;

typedef enum {
  MINIBLAS_STATUS_SUCCESS = 0,
  MINIBLAS_STATUS_NOT_INITIALIZED = 1,
  MINIBLAS_STATUS_INVALID_VALUE = 7,
} miniblasStatus_t;

/** Epilogues fused into the matrix multiply. */
enum miniblasEpilogue {
  MINIBLAS_EPILOGUE_DEFAULT = 1,
  MINIBLAS_EPILOGUE_RELU_BIAS = 6, /* bias then ReLU */
};

typedef struct {
  int workspaceSize;
  float wavesCount;
} miniblasHeuristicResult_t;

/** Creates the library handle. */
miniblasStatus_t MINIBLASAPI miniblasCreate(miniblasHandle_t* handle);

/** Multiplies two matrices: D = alpha * (A * B) + beta * C. */
miniblasStatus_t MINIBLASAPI miniblasMatmul(miniblasHandle_t handle,
                                            const void* alpha,
                                            const void* A,
                                            const void* B,
                                            const void* beta,
                                            void* D,
                                            int m, int n, int k);

miniblasStatus_t MINIBLASAPI
miniblasMatmulDescSetAttribute(miniblasHandle_t handle, int attribute, const void* buf,
                               unsigned long sizeInBytes);

static inline int miniblasHelper(int x) {
  int y = x + 1;
  miniblasCreate(0);
  return y;
}
