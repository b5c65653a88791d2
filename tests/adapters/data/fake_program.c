/* A fake StitchCUDA program for the adapters tests: implements the ABI (include/stitch/program.h) on
 * HOST memory, so the PyTorch adapter (CPU tensors) and main.cc's host-memory mode can run it on a
 * machine without a GPU. It computes fake_task.py's forward:
 *   params (graph order): bias [8], inner.weight [3, 8], inner.bias [3], scale [8]
 *   out0 [4, 8] = x * 2 + bias        out1 [3, 8] = inner.weight * scale
 * init copies the params (as a program that repacks would), so a stale state shows. An input whose
 * first element is -12345 makes forward fail, to test error reporting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stitch/program.h"

typedef struct fake_state {
  float bias[8];
  float weight[3][8];
  float scale[8];
  char error[256];
} fake_state;

static char init_error[256];

static int check(const stitch_tensor* t, int rank, const int64_t* shape, char* error,
                 const char* what, int index) {
  int ok = t->dtype == STITCH_FLOAT32 && t->rank == rank && t->data != NULL;
  int64_t expected = 1;
  for (int d = rank - 1; ok && d >= 0; --d) {
    ok = t->shape[d] == shape[d] && (shape[d] == 1 || t->strides[d] == expected);
    expected *= shape[d];
  }
  if (!ok) snprintf(error, 256, "fake: %s %d: not the float32 contiguous shape expected", what, index);
  return ok;
}

int stitch_abi_version(void) { return STITCH_ABI_VERSION; }

int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  static const int64_t bias_shape[1] = {8}, weight_shape[2] = {3, 8}, inner_bias_shape[1] = {3};
  if (n_params != 4) {
    snprintf(init_error, sizeof init_error, "fake: expected 4 params, got %d", n_params);
    return STITCH_ERROR_INVALID_ARGUMENT;
  }
  if (!check(&params[0], 1, bias_shape, init_error, "param", 0) ||
      !check(&params[1], 2, weight_shape, init_error, "param", 1) ||
      !check(&params[2], 1, inner_bias_shape, init_error, "param", 2) ||
      !check(&params[3], 1, bias_shape, init_error, "param", 3))
    return STITCH_ERROR_INVALID_ARGUMENT;
  fake_state* s = (fake_state*)calloc(1, sizeof(fake_state));
  if (!s) return STITCH_ERROR_OUT_OF_MEMORY;
  memcpy(s->bias, params[0].data, sizeof s->bias);
  memcpy(s->weight, params[1].data, sizeof s->weight);
  memcpy(s->scale, params[3].data, sizeof s->scale);
  *state = s;
  return STITCH_OK;
}

int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs, stitch_tensor* outputs,
                   int n_outputs, void* stream) {
  static const int64_t x_shape[2] = {4, 8}, out1_shape[2] = {3, 8};
  fake_state* s = (fake_state*)state;
  if (n_inputs != 1 || n_outputs != 2) {
    snprintf(s->error, sizeof s->error, "fake: expected 1 input and 2 outputs, got %d and %d",
             n_inputs, n_outputs);
    return STITCH_ERROR_INVALID_ARGUMENT;
  }
  if (!check(&inputs[0], 2, x_shape, s->error, "input", 0) ||
      !check(&outputs[0], 2, x_shape, s->error, "output", 0) ||
      !check(&outputs[1], 2, out1_shape, s->error, "output", 1))
    return STITCH_ERROR_INVALID_ARGUMENT;
  const float* x = (const float*)inputs[0].data;
  if (x[0] == -12345.0f) {
    snprintf(s->error, sizeof s->error, "fake: poisoned input seen");
    return STITCH_ERROR_INTERNAL;
  }
  float* out0 = (float*)outputs[0].data;
  float* out1 = (float*)outputs[1].data;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j) out0[i * 8 + j] = x[i * 8 + j] * 2.0f + s->bias[j];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 8; ++j) out1[i * 8 + j] = s->weight[i][j] * s->scale[j];
  (void)stream;
  return STITCH_OK;
}

void stitch_destroy(void* state) { free(state); }

const char* stitch_last_error(void* state) {
  return state ? ((fake_state*)state)->error : init_error;
}
