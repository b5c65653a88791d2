// Guarded buffers, device counters and IPC mappings; see device_memory.h.
#include "runner/device_memory.h"

#include <cstring>
#include <utility>

namespace stitch::runner {

Error cuda_error(cudaError_t status, std::string_view what) {
  return make_error("{}: {} ({})", what, cudaGetErrorName(status), cudaGetErrorString(status));
}

double event_ms(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  if (cudaEventElapsedTime(&ms, from, to) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return ms;
}

Geometry geometry_of(const TensorSpec& tensor) {
  Geometry geometry;
  geometry.rank = static_cast<int32_t>(tensor.shape.size());
  for (size_t i = 0; i < tensor.shape.size(); ++i) {
    geometry.shape[i] = tensor.shape[i];
    geometry.strides[i] = tensor.strides[i];
  }
  geometry.numel = tensor.numel();
  geometry.contiguous = tensor.contiguous();
  return geometry;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept {
  *this = std::move(other);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = other.bytes_;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (data_) cudaFree(data_);
}

Result<DeviceBuffer> DeviceBuffer::allocate(uint64_t bytes, std::string_view what) {
  DeviceBuffer buffer;
  buffer.bytes_ = bytes;
  STITCH_CUDA_TRY(cudaMalloc(&buffer.data_, bytes > 0 ? bytes : 256),
                  fmt::format("cudaMalloc({} bytes, {})", bytes, what));
  return buffer;
}

Result<GuardedBuffer> GuardedBuffer::allocate(uint64_t payload_bytes, uint64_t band_bytes,
                                              uint64_t canary_seed, cudaStream_t stream) {
  GuardedBuffer buffer;
  // Bands keep 256-byte alignment of the payload, which vectorised kernels rely on.
  buffer.band_ = (band_bytes + 255) / 256 * 256;
  buffer.payload_ = payload_bytes;
  buffer.seed_ = canary_seed;
  uint64_t total = buffer.band_ + (payload_bytes + 255) / 256 * 256 + buffer.band_;
  if (total == 0) total = 256;
  STITCH_ASSIGN_OR_RETURN(buffer.memory_, DeviceBuffer::allocate(total, "guarded buffer"));
  STITCH_CUDA_TRY(buffer.restore_canaries(stream), "filling canaries");
  return buffer;
}

cudaError_t GuardedBuffer::count_damage(unsigned long long* counter, cudaStream_t stream) const {
  cudaError_t status = count_canary_mismatches(base(), 0, band_, seed_, counter, stream);
  if (status != cudaSuccess) return status;
  return count_canary_mismatches(base(), band_ + payload_, total(), seed_, counter, stream);
}

cudaError_t GuardedBuffer::restore_canaries(cudaStream_t stream) const {
  cudaError_t status = fill_canary(base(), 0, band_, seed_, stream);
  if (status != cudaSuccess) return status;
  return fill_canary(base(), band_ + payload_, total(), seed_, stream);
}

DeviceCounters::~DeviceCounters() {
  if (device_) cudaFree(device_);
}

Status DeviceCounters::init() {
  STITCH_CUDA_TRY(cudaMalloc(&device_, kSlots * sizeof(unsigned long long)),
                  "cudaMalloc(counters)");
  return {};
}

cudaError_t DeviceCounters::zero(cudaStream_t stream) const {
  return cudaMemsetAsync(device_, 0, kSlots * sizeof(unsigned long long), stream);
}

Result<std::vector<unsigned long long>> DeviceCounters::read(cudaStream_t stream) const {
  std::vector<unsigned long long> host(kSlots);
  STITCH_CUDA_TRY(cudaMemcpyAsync(host.data(), device_, kSlots * sizeof(unsigned long long),
                                  cudaMemcpyDeviceToHost, stream),
                  "reading counters");
  STITCH_CUDA_TRY(cudaStreamSynchronize(stream), "reading counters");
  return host;
}

Result<void*> IpcMapper::map(const IpcRef& ref) {
  auto found = open_.find(ref.handle_hex);
  if (found == open_.end()) {
    STITCH_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, parse_ipc_handle(ref.handle_hex));
    cudaIpcMemHandle_t handle;
    static_assert(sizeof(handle) == kIpcHandleBytes);
    std::memcpy(&handle, bytes.data(), sizeof(handle));
    void* base = nullptr;
    STITCH_CUDA_TRY(cudaIpcOpenMemHandle(&base, handle, cudaIpcMemLazyEnablePeerAccess),
                    "cudaIpcOpenMemHandle");
    found = open_.emplace(ref.handle_hex, base).first;
  }
  return static_cast<void*>(static_cast<uint8_t*>(found->second) + ref.offset_bytes);
}

void IpcMapper::close_all() {
  for (auto& [hex, base] : open_)
    cudaIpcCloseMemHandle(base);
  open_.clear();
}

}  // namespace stitch::runner
