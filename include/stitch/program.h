/* The program ABI (shared/DESIGN.md §3): what every generated or hand-written StitchCUDA program
 * exports. A program is a shared library built by nvcc that links only the CUDA runtime and NVIDIA's
 * libraries, never libtorch or Python. C symbols only, so any host can dlopen it. */
#ifndef STITCH_PROGRAM_H_
#define STITCH_PROGRAM_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STITCH_ABI_VERSION 1
#define STITCH_MAX_RANK 8

/* Same spelling and order as the IR's DType (src/ir/ir.h) and graph.json. */
typedef enum stitch_dtype {
  STITCH_FLOAT32 = 0,
  STITCH_FLOAT64 = 1,
  STITCH_FLOAT16 = 2,
  STITCH_BFLOAT16 = 3,
  STITCH_INT64 = 4,
  STITCH_INT32 = 5,
  STITCH_INT16 = 6,
  STITCH_INT8 = 7,
  STITCH_UINT8 = 8,
  STITCH_BOOL = 9
} stitch_dtype;

/* A tensor on the device. Strides are in elements. */
typedef struct stitch_tensor {
  void* data;
  stitch_dtype dtype;
  int32_t rank;
  int64_t shape[STITCH_MAX_RANK];
  int64_t strides[STITCH_MAX_RANK];
} stitch_tensor;

/* Status codes: 0 is success; anything else is an error whose text stitch_last_error() gives. */
#define STITCH_OK 0
#define STITCH_ERROR_INVALID_ARGUMENT 1
#define STITCH_ERROR_CUDA 2
#define STITCH_ERROR_LIBRARY 3 /* cuBLAS, cuDNN, ... */
#define STITCH_ERROR_OUT_OF_MEMORY 4
#define STITCH_ERROR_INTERNAL 5

/* The version of this header the program was built against (must equal STITCH_ABI_VERSION). */
int stitch_abi_version(void);

/* Params arrive on the device in the reference's layout, in graph.json `params` order; init may
 * repack them into state it owns. state is written only on success. */
int stitch_init(const stitch_tensor* params, int n_params, void** state);

/* Runs one forward pass on `stream`: reads `inputs` (graph.json `inputs` order, random inputs
 * included), writes every element of `outputs` (caller-owned buffers, graph.json `outputs` order,
 * contiguous: a reference that returns a view, e.g. a permute, still gets a row-major output).
 * After them, one output per graph.json `state_updates` entry (a buffer forward updates, e.g.
 * BatchNorm's running statistics): the buffer's value after this call, which the program also keeps
 * as the buffer's value for its next call, as the reference's module does.
 * Must not modify inputs, and must finish all its work on `stream` (or join other streams into it). */
int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs, stitch_tensor* outputs,
                   int n_outputs, void* stream /* cudaStream_t */);

void stitch_destroy(void* state);

/* Text of the last error on this state (or of the last failed init when state is NULL). */
const char* stitch_last_error(void* state);

#ifdef __cplusplus
}
#endif

#endif /* STITCH_PROGRAM_H_ */
