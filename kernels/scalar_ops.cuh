// Scalar device functions that generated elementwise bodies call (src/codegen/emit_elementwise.cc),
// one per ATen op whose float semantics need more than an operator: NaN propagation like PyTorch
// (fmaxf/fminf drop NaN, torch.maximum/clamp/relu keep it), Python-style remainder, and the
// activation formulas PyTorch's CUDA kernels use (erf GELU, tanh GELU, softplus with its threshold).
#pragma once

#include <cuda_runtime.h>

namespace stitch::kernels {

__device__ __forceinline__ float nan_f() { return __int_as_float(0x7fffffff); }

__device__ __forceinline__ float op_relu(float x) { return x > 0.0f ? x : (x != x ? x : 0.0f); }

__device__ __forceinline__ float op_maximum(float a, float b) {
  return (a != a || b != b) ? nan_f() : (a > b ? a : b);
}
__device__ __forceinline__ float op_minimum(float a, float b) {
  return (a != a || b != b) ? nan_f() : (a < b ? a : b);
}

// clamp(x, lo, hi): NaN stays NaN; lo is applied first, then hi (PyTorch's order when lo > hi).
__device__ __forceinline__ float op_clamp(float x, float lo, float hi) {
  if (x != x) return x;
  x = x < lo ? lo : x;
  return x > hi ? hi : x;
}
__device__ __forceinline__ float op_clamp_min(float x, float lo) { return x != x ? x : (x < lo ? lo : x); }
__device__ __forceinline__ float op_clamp_max(float x, float hi) { return x != x ? x : (x > hi ? hi : x); }

__device__ __forceinline__ float op_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float op_silu(float x) { return x / (1.0f + expf(-x)); }

__device__ __forceinline__ float op_gelu_erf(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}
__device__ __forceinline__ float op_gelu_tanh(float x) {
  const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
}

// softplus(x) = log1p(exp(beta x)) / beta, and x itself where beta x > threshold.
__device__ __forceinline__ float op_softplus(float x, float beta, float threshold) {
  const float scaled = x * beta;
  return scaled > threshold ? x : log1pf(expf(scaled)) / beta;
}
// mish(x) = x · tanh(softplus(x)), with tanh(log1p(e)) = n / (n + 2), n = e · (e + 2), e = exp(x):
// one exponential and a division for PyTorch's exponential, log1p and tanh (a few ulps from its
// bits). Above 20, x itself (tanh is 1 in float there; e · e would overflow past 44). Host too:
// plans_test.cu checks it against the definition in double.
__host__ __device__ __forceinline__ float op_mish(float x) {
  if (x > 20.0f) return x;
  const float e = expf(x), n = e * (e + 2.0f);
  return x * (n / (n + 2.0f));
}

__device__ __forceinline__ float op_elu(float x, float alpha, float scale, float input_scale) {
  return x > 0.0f ? scale * x : scale * alpha * (expf(x * input_scale) - 1.0f);
}
__device__ __forceinline__ float op_hardsigmoid(float x) { return op_clamp(x / 6.0f + 0.5f, 0.0f, 1.0f); }
__device__ __forceinline__ float op_hardswish(float x) { return x * op_clamp(x + 3.0f, 0.0f, 6.0f) / 6.0f; }
__device__ __forceinline__ float op_leaky_relu(float x, float slope) { return x > 0.0f ? x : x * slope; }

__device__ __forceinline__ float op_sign(float x) {
  return x != x ? x : static_cast<float>((x > 0.0f) - (x < 0.0f));
}

// Python's %: the result has the divisor's sign.
__device__ __forceinline__ float op_remainder(float a, float b) {
  const float r = fmodf(a, b);
  return (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) ? r + b : r;
}

// x ** e with the exponents worth exact special cases (x*x is what PyTorch's pow kernel does for 2).
__device__ __forceinline__ float op_pow(float x, float e) {
  if (e == 2.0f) return x * x;
  if (e == 1.0f) return x;
  if (e == 0.5f) return sqrtf(x);
  if (e == 3.0f) return x * x * x;
  if (e == -1.0f) return 1.0f / x;
  return powf(x, e);
}

__device__ __forceinline__ float op_bool(bool b) { return b ? 1.0f : 0.0f; }

}  // namespace stitch::kernels
