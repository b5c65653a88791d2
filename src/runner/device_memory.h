// Device memory the runner owns: guarded buffers (one allocation per tensor with canary bands
// before and after it), a small block of device counters read back after a synchronize, and the
// mapping of the judge's CUDA IPC handles. RAII, move-only; errors are Status values.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runner/runner_kernels.h"
#include "runner/spec.h"
#include "util/result.h"

namespace stitch::runner {

// Formats "what: cudaErrorX (text)".
Error cuda_error(cudaError_t status, std::string_view what);
#define STITCH_CUDA_TRY(call, what)                                   \
  do {                                                                \
    cudaError_t stitch_cuda_status_ = (call);                         \
    if (stitch_cuda_status_ != cudaSuccess)                           \
      return ::stitch::runner::cuda_error(stitch_cuda_status_, what); \
  } while (0)

// Milliseconds between two recorded, completed events; -1 (error cleared) when they cannot be read.
double event_ms(cudaEvent_t from, cudaEvent_t to);

Geometry geometry_of(const TensorSpec& tensor);

// A plain device allocation (staging copies, sources of --self-test check sets, the L2 flush
// buffer, the memory of a GuardedBuffer).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  static Result<DeviceBuffer> allocate(uint64_t bytes, std::string_view what);
  void* data() const { return data_; }
  uint64_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  uint64_t bytes_ = 0;
};

// [band][payload, padded to 256 bytes][band]. The canary covers everything but the payload, so a
// write one element past the end is caught even when it lands in the padding. Move-only, as the
// DeviceBuffer holding it.
class GuardedBuffer {
 public:
  static Result<GuardedBuffer> allocate(uint64_t payload_bytes, uint64_t band_bytes,
                                        uint64_t canary_seed, cudaStream_t stream);

  void* data() const { return base() + band_; }
  uint64_t payload_bytes() const { return payload_; }
  // Adds the canary bytes that no longer hold their pattern to *counter.
  cudaError_t count_damage(unsigned long long* counter, cudaStream_t stream) const;
  // Rewrites both bands, so one overrun is reported once rather than on every later call.
  cudaError_t restore_canaries(cudaStream_t stream) const;

 private:
  uint8_t* base() const { return static_cast<uint8_t*>(memory_.data()); }
  uint64_t total() const { return memory_.bytes(); }

  DeviceBuffer memory_;
  uint64_t payload_ = 0;
  uint64_t band_ = 0;
  uint64_t seed_ = 0;
};

// A few 64-bit device counters: zero them, let kernels add to them, read them back.
class DeviceCounters {
 public:
  static constexpr int kSlots = 64;
  DeviceCounters() = default;
  DeviceCounters(const DeviceCounters&) = delete;
  DeviceCounters& operator=(const DeviceCounters&) = delete;
  ~DeviceCounters();
  Status init();
  unsigned long long* slot(int index) const { return device_ + index; }
  CompareCounts* compare_slot(int index) const {  // uses 3 slots from `index`
    return reinterpret_cast<CompareCounts*>(device_ + index);
  }
  cudaError_t zero(cudaStream_t stream) const;
  // Copies every slot back and synchronizes the stream.
  Result<std::vector<unsigned long long>> read(cudaStream_t stream) const;

 private:
  unsigned long long* device_ = nullptr;
};

// Maps the judge's allocations into this process. A handle may be listed several times (the
// caching allocator places several tensors in one block); CUDA maps each handle once per process,
// so mappings are shared and closed together.
class IpcMapper {
 public:
  IpcMapper() = default;
  IpcMapper(const IpcMapper&) = delete;
  IpcMapper& operator=(const IpcMapper&) = delete;
  ~IpcMapper() { close_all(); }

  Result<void*> map(const IpcRef& ref);  // base of the allocation + offset_bytes
  void close_all();

 private:
  std::map<std::string, void*> open_;
};

}  // namespace stitch::runner
