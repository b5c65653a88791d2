// Device kernels of the runner (see runner_kernels.h): all grid-stride loops over 64-bit indices,
// because single tensors reach 6 GB. None of this is timed; clarity beats speed here.
#include "runner/runner_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

namespace stitch::runner {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

unsigned blocks_for(int64_t count) {
  int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, kMaxBlocks));
}

__host__ __device__ inline int dtype_size(stitch_dtype dtype) {
  switch (dtype) {
    case STITCH_FLOAT64:
    case STITCH_INT64:
      return 8;
    case STITCH_FLOAT32:
    case STITCH_INT32:
      return 4;
    case STITCH_FLOAT16:
    case STITCH_BFLOAT16:
    case STITCH_INT16:
      return 2;
    default:
      return 1;
  }
}

__device__ __forceinline__ uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__device__ __forceinline__ int64_t element_offset(const Geometry& g, int64_t index) {
  if (g.contiguous) return index;
  int64_t offset = 0;
  for (int d = g.rank - 1; d >= 0; --d) {
    int64_t coord = index % g.shape[d];
    index /= g.shape[d];
    offset += coord * g.strides[d];
  }
  return offset;
}

__device__ __forceinline__ uint64_t load_bits(const void* data, int64_t offset, int size) {
  switch (size) {
    case 8:
      return static_cast<const uint64_t*>(data)[offset];
    case 4:
      return static_cast<const uint32_t*>(data)[offset];
    case 2:
      return static_cast<const uint16_t*>(data)[offset];
    default:
      return static_cast<const uint8_t*>(data)[offset];
  }
}

__device__ __forceinline__ void store_bits(void* data, int64_t offset, int size, uint64_t bits) {
  switch (size) {
    case 8:
      static_cast<uint64_t*>(data)[offset] = bits;
      break;
    case 4:
      static_cast<uint32_t*>(data)[offset] = static_cast<uint32_t>(bits);
      break;
    case 2:
      static_cast<uint16_t*>(data)[offset] = static_cast<uint16_t>(bits);
      break;
    default:
      static_cast<uint8_t*>(data)[offset] = static_cast<uint8_t>(bits);
      break;
  }
}

__device__ __forceinline__ double load_value(const void* data, int64_t offset, stitch_dtype dtype) {
  switch (dtype) {
    case STITCH_FLOAT32:
      return static_cast<const float*>(data)[offset];
    case STITCH_FLOAT64:
      return static_cast<const double*>(data)[offset];
    case STITCH_FLOAT16:
      return __half2float(static_cast<const __half*>(data)[offset]);
    case STITCH_BFLOAT16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(data)[offset]);
    case STITCH_INT64:
      return static_cast<double>(static_cast<const int64_t*>(data)[offset]);
    case STITCH_INT32:
      return static_cast<const int32_t*>(data)[offset];
    case STITCH_INT16:
      return static_cast<const int16_t*>(data)[offset];
    case STITCH_INT8:
      return static_cast<const int8_t*>(data)[offset];
    case STITCH_UINT8:
      return static_cast<const uint8_t*>(data)[offset];
    case STITCH_BOOL:
      return static_cast<const uint8_t*>(data)[offset] != 0 ? 1.0 : 0.0;
  }
  return 0;
}

// randint values are whole numbers held exactly in a double up to 2^53, enough for any range a
// task declares.
__device__ __forceinline__ void store_value(void* data, int64_t offset, stitch_dtype dtype,
                                            double value) {
  switch (dtype) {
    case STITCH_FLOAT32:
      static_cast<float*>(data)[offset] = static_cast<float>(value);
      break;
    case STITCH_FLOAT64:
      static_cast<double*>(data)[offset] = value;
      break;
    case STITCH_FLOAT16:
      static_cast<__half*>(data)[offset] = __double2half(value);
      break;
    case STITCH_BFLOAT16:
      static_cast<__nv_bfloat16*>(data)[offset] = __double2bfloat16(value);
      break;
    case STITCH_INT64:
      static_cast<int64_t*>(data)[offset] = static_cast<int64_t>(value);
      break;
    case STITCH_INT32:
      static_cast<int32_t*>(data)[offset] = static_cast<int32_t>(value);
      break;
    case STITCH_INT16:
      static_cast<int16_t*>(data)[offset] = static_cast<int16_t>(value);
      break;
    case STITCH_INT8:
      static_cast<int8_t*>(data)[offset] = static_cast<int8_t>(value);
      break;
    case STITCH_UINT8:
      static_cast<uint8_t*>(data)[offset] = static_cast<uint8_t>(value);
      break;
    case STITCH_BOOL:
      static_cast<uint8_t*>(data)[offset] = value != 0 ? 1 : 0;
      break;
  }
}

__device__ __forceinline__ double unit_interval(uint64_t bits) {  // [0, 1)
  return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);
}

__global__ void fill_random_kernel(void* data, stitch_dtype dtype, Geometry g, FillKind kind,
                                   double a, double b, uint64_t seed) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.numel;
       i += stride) {
    uint64_t h1 = mix64(seed ^ mix64(2 * static_cast<uint64_t>(i)));
    double u = unit_interval(h1);
    double value = 0;
    switch (kind) {
      case FillKind::uniform:
        value = u;
        break;
      case FillKind::normal: {
        // Box-Muller in float: statistical quality, not precision, matters for test inputs.
        uint64_t h2 = mix64(seed ^ mix64(2 * static_cast<uint64_t>(i) + 1));
        float u1 = static_cast<float>((h1 >> 40) + 1) * (1.0f / 16777216.0f);  // (0, 1]
        float u2 = static_cast<float>(h2 >> 40) * (1.0f / 16777216.0f);
        value = sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
        break;
      }
      case FillKind::randint:
        value = floor(a + u * (b - a));
        break;
      case FillKind::bernoulli:
        value = u < a ? 1.0 : 0.0;
        break;
    }
    store_value(data, element_offset(g, i), dtype, value);
  }
}

__global__ void fill_bits_kernel(void* data, int size, Geometry g, uint64_t bits) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.numel;
       i += stride)
    store_bits(data, element_offset(g, i), size, bits);
}

__global__ void count_bits_kernel(const void* data, int size, Geometry g, uint64_t bits,
                                  unsigned long long* counter) {
  unsigned long long local = 0;
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.numel;
       i += stride)
    local += load_bits(data, element_offset(g, i), size) == bits;
  if (local) atomicAdd(counter, local);
}

__device__ __forceinline__ uint8_t canary_byte(uint64_t seed, uint64_t offset) {
  return static_cast<uint8_t>(mix64(seed ^ (offset >> 3)) >> ((offset & 7) * 8));
}

__global__ void fill_canary_kernel(uint8_t* base, uint64_t begin, uint64_t end, uint64_t seed) {
  uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t o = begin + static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < end;
       o += stride)
    base[o] = canary_byte(seed, o);
}

__global__ void check_canary_kernel(const uint8_t* base, uint64_t begin, uint64_t end,
                                    uint64_t seed, unsigned long long* counter) {
  unsigned long long local = 0;
  uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t o = begin + static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < end;
       o += stride)
    local += base[o] != canary_byte(seed, o);
  if (local) atomicAdd(counter, local);
}

__global__ void compare_kernel(const void* a, const void* b, stitch_dtype dtype, Geometry g,
                               double atol, double rtol, CompareCounts* counts) {
  int size = dtype_size(dtype);
  bool floating = dtype == STITCH_FLOAT32 || dtype == STITCH_FLOAT64 || dtype == STITCH_FLOAT16 ||
                  dtype == STITCH_BFLOAT16;
  unsigned long long bit_mismatches = 0, tolerance_mismatches = 0;
  double max_diff = 0;
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.numel;
       i += stride) {
    int64_t offset = element_offset(g, i);
    if (load_bits(a, offset, size) == load_bits(b, offset, size)) continue;
    ++bit_mismatches;
    if (!floating) {
      ++tolerance_mismatches;
      max_diff = fmax(max_diff, fabs(load_value(a, offset, dtype) - load_value(b, offset, dtype)));
      continue;
    }
    double x = load_value(a, offset, dtype), y = load_value(b, offset, dtype);
    if (isnan(x) && isnan(y)) continue;  // two NaNs with different payloads agree
    if (isnan(x) || isnan(y) || isinf(x) || isinf(y)) {
      if (x != y) ++tolerance_mismatches;
      continue;
    }
    double diff = fabs(x - y);
    max_diff = fmax(max_diff, diff);
    if (diff > atol + rtol * fabs(y)) ++tolerance_mismatches;
  }
  if (bit_mismatches) atomicAdd(&counts->bit_mismatches, bit_mismatches);
  if (tolerance_mismatches) atomicAdd(&counts->tolerance_mismatches, tolerance_mismatches);
  // Non-negative doubles order like their bit patterns read as unsigned integers.
  if (max_diff > 0)
    atomicMax(&counts->max_abs_diff_bits,
              static_cast<unsigned long long>(__double_as_longlong(max_diff)));
}

__global__ void byte_mismatch_kernel(const uint8_t* a, const uint8_t* b, uint64_t bytes,
                                     bool word_aligned, unsigned long long* counter) {
  unsigned long long local = 0;
  uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  uint64_t words = word_aligned ? bytes / 8 : 0;
  const uint64_t* wa = reinterpret_cast<const uint64_t*>(a);
  const uint64_t* wb = reinterpret_cast<const uint64_t*>(b);
  for (uint64_t w = first; w < words; w += stride) {
    uint64_t diff = wa[w] ^ wb[w];
    for (int k = 0; k < 8 && diff; ++k, diff >>= 8)
      local += (diff & 0xFF) != 0;
  }
  for (uint64_t o = words * 8 + first; o < bytes; o += stride)
    local += a[o] != b[o];
  if (local) atomicAdd(counter, local);
}

__global__ void checksum_kernel(const uint8_t* data, uint64_t bytes, bool word_aligned,
                                unsigned long long* sum) {
  unsigned long long local = 0;
  uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  uint64_t words = word_aligned ? bytes / 8 : 0;
  const uint64_t* w64 = reinterpret_cast<const uint64_t*>(data);
  for (uint64_t w = first; w < words; w += stride)
    local += mix64(w64[w] ^ mix64(w));
  for (uint64_t o = words * 8 + first; o < bytes; o += stride)
    local += mix64(static_cast<uint64_t>(data[o]) ^ mix64(o + 0x5151515151515151ull));
  if (local) atomicAdd(sum, local);
}

}  // namespace

uint64_t poison_bits(stitch_dtype dtype, int pattern) {
  bool first = pattern == 0;
  switch (dtype) {
    case STITCH_FLOAT32:
      return first ? 0x7FDEAD5Aull : 0x7FCAFE5Aull;
    case STITCH_FLOAT64:
      return first ? 0x7FFDEAD5A5A5A5A5ull : 0x7FFCAFE5A5A5A5A5ull;
    case STITCH_FLOAT16:
      return first ? 0x7E5Aull : 0x7E3Cull;
    case STITCH_BFLOAT16:
      return first ? 0x7FDAull : 0x7FCBull;
    case STITCH_INT64:
      return first ? 0xA5A5A5A5A5A5A5A5ull : 0x5A5A5A5A5A5A5A5Aull;
    case STITCH_INT32:
      return first ? 0xA5A5A5A5ull : 0x5A5A5A5Aull;
    case STITCH_INT16:
      return first ? 0xA5A5ull : 0x5A5Aull;
    default:
      return first ? 0xA5ull : 0x5Aull;  // int8, uint8, bool (not 0 or 1)
  }
}

cudaError_t fill_random(void* data, stitch_dtype dtype, const Geometry& geometry, FillKind kind,
                        double a, double b, uint64_t seed, cudaStream_t stream) {
  if (geometry.numel == 0) return cudaSuccess;
  fill_random_kernel<<<blocks_for(geometry.numel), kThreads, 0, stream>>>(data, dtype, geometry,
                                                                          kind, a, b, seed);
  return cudaGetLastError();
}

cudaError_t fill_poison(void* data, stitch_dtype dtype, const Geometry& geometry, int pattern,
                        cudaStream_t stream) {
  if (geometry.numel == 0) return cudaSuccess;
  fill_bits_kernel<<<blocks_for(geometry.numel), kThreads, 0, stream>>>(
      data, dtype_size(dtype), geometry, poison_bits(dtype, pattern));
  return cudaGetLastError();
}

cudaError_t count_poison(const void* data, stitch_dtype dtype, const Geometry& geometry,
                         int pattern, unsigned long long* counter, cudaStream_t stream) {
  if (geometry.numel == 0) return cudaSuccess;
  count_bits_kernel<<<blocks_for(geometry.numel), kThreads, 0, stream>>>(
      data, dtype_size(dtype), geometry, poison_bits(dtype, pattern), counter);
  return cudaGetLastError();
}

cudaError_t fill_canary(void* base, uint64_t begin, uint64_t end, uint64_t seed,
                        cudaStream_t stream) {
  if (end <= begin) return cudaSuccess;
  fill_canary_kernel<<<blocks_for(static_cast<int64_t>(end - begin)), kThreads, 0, stream>>>(
      static_cast<uint8_t*>(base), begin, end, seed);
  return cudaGetLastError();
}

cudaError_t count_canary_mismatches(const void* base, uint64_t begin, uint64_t end, uint64_t seed,
                                    unsigned long long* counter, cudaStream_t stream) {
  if (end <= begin) return cudaSuccess;
  check_canary_kernel<<<blocks_for(static_cast<int64_t>(end - begin)), kThreads, 0, stream>>>(
      static_cast<const uint8_t*>(base), begin, end, seed, counter);
  return cudaGetLastError();
}

cudaError_t compare_elements(const void* a, const void* b, stitch_dtype dtype,
                             const Geometry& geometry, double atol, double rtol,
                             CompareCounts* counts, cudaStream_t stream) {
  if (geometry.numel == 0) return cudaSuccess;
  compare_kernel<<<blocks_for(geometry.numel), kThreads, 0, stream>>>(a, b, dtype, geometry, atol,
                                                                      rtol, counts);
  return cudaGetLastError();
}

cudaError_t count_byte_mismatches(const void* a, const void* b, uint64_t bytes,
                                  unsigned long long* counter, cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  bool aligned =
      (reinterpret_cast<uintptr_t>(a) % 8 == 0) && (reinterpret_cast<uintptr_t>(b) % 8 == 0);
  byte_mismatch_kernel<<<blocks_for(static_cast<int64_t>(aligned ? bytes / 8 + 8 : bytes)),
                         kThreads, 0, stream>>>(
      static_cast<const uint8_t*>(a), static_cast<const uint8_t*>(b), bytes, aligned, counter);
  return cudaGetLastError();
}

cudaError_t checksum_bytes(const void* data, uint64_t bytes, unsigned long long* sum,
                           cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  bool aligned = reinterpret_cast<uintptr_t>(data) % 8 == 0;
  checksum_kernel<<<blocks_for(static_cast<int64_t>(aligned ? bytes / 8 + 8 : bytes)), kThreads, 0,
                    stream>>>(static_cast<const uint8_t*>(data), bytes, aligned, sum);
  return cudaGetLastError();
}

__global__ void stitch_runner_stream_marker() {}

cudaError_t launch_stream_marker(cudaStream_t stream) {
  stitch_runner_stream_marker<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

}  // namespace stitch::runner
