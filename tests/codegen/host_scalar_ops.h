// kernels/scalar_ops.cuh for the host compiler, so the emitter's rendered expressions compile as
// plain C++ (op_table_test.cc). cuda_runtime.h gives the host compiler __device__ and
// __forceinline__; the few device intrinsics an expression may name get host twins here:
// __int_as_float (bit cast), rsqrtf, erfinvf (Giles' single-precision approximation, the kind of
// polynomial the device uses). Everything else is the host's libm.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstring>

inline float __int_as_float(int bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float erfinvf(float x) {
  float w = -std::log((1.0f - x) * (1.0f + x)), p;
  if (w < 5.0f) {
    w = w - 2.5f;
    p = 2.81022636e-08f;
    p = 3.43273939e-07f + p * w;
    p = -3.5233877e-06f + p * w;
    p = -4.39150654e-06f + p * w;
    p = 0.00021858087f + p * w;
    p = -0.00125372503f + p * w;
    p = -0.00417768164f + p * w;
    p = 0.246640727f + p * w;
    p = 1.50140941f + p * w;
  } else {
    w = std::sqrt(w) - 3.0f;
    p = -0.000200214257f;
    p = 0.000100950558f + p * w;
    p = 0.00134934322f + p * w;
    p = -0.00367342844f + p * w;
    p = 0.00573950773f + p * w;
    p = -0.0076224613f + p * w;
    p = 0.00943887047f + p * w;
    p = 1.00167406f + p * w;
    p = 2.83297682f + p * w;
  }
  return p * x;
}
using std::isinf;

#include "kernels/scalar_ops.cuh"
