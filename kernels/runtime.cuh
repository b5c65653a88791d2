// Host-side helpers for generated programs: checked-call macros that fill the program's error text,
// per-device properties cached once per process (grid sizing), one-allocation workspace arenas and
// a cache of CUDA graphs keyed by the pointers a forward call was given.
//
// The macros expect to run inside a function that returns int and has `std::string& error` in
// scope; they return the codes of include/stitch/program.h.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

// The status codes of include/stitch/program.h, repeated (same tokens: an identical redefinition is
// legal) so this header also compiles without -I include. tests/kernels check that they agree.
#ifndef STITCH_OK
#define STITCH_OK 0
#define STITCH_ERROR_INVALID_ARGUMENT 1
#define STITCH_ERROR_CUDA 2
#define STITCH_ERROR_LIBRARY 3 /* cuBLAS, cuDNN, ... */
#define STITCH_ERROR_OUT_OF_MEMORY 4
#define STITCH_ERROR_INTERNAL 5
#endif

namespace stitch::kernels {
namespace detail {

// "<file>:<line>: <what>: <name> (<text>)"
inline std::string format_failure(const char* file, int line, const char* what, const char* name,
                                  const char* text) {
  std::string out = file;
  out += ':';
  out += std::to_string(line);
  out += ": ";
  out += what;
  out += ": ";
  out += name ? name : "?";
  out += " (";
  out += text ? text : "?";
  out += ')';
  return out;
}

// Allocation failures are told apart so the caller can report out-of-memory as such.
inline int status_of(cudaError_t e) {
  return e == cudaErrorMemoryAllocation ? STITCH_ERROR_OUT_OF_MEMORY : STITCH_ERROR_CUDA;
}

// What a launch of `kernel` asked for beside what the kernel and the device allow
// (cudaFuncGetAttributes, the opt-in shared memory limit): the text to add where a launch
// returns cudaErrorInvalidValue or a resource error, which the runtime does not explain.
inline std::string launch_request(const void* kernel, unsigned blocks, unsigned threads,
                                  size_t dynamic_smem) {
  std::string out = std::to_string(blocks) + " blocks of " + std::to_string(threads) +
                    " threads, " + std::to_string(dynamic_smem) + " bytes of dynamic shared memory";
  cudaFuncAttributes a{};
  const cudaError_t status = cudaFuncGetAttributes(&a, kernel);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return out + "; the kernel's attributes: " + cudaGetErrorName(status);
  }
  int device = 0, optin = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) !=
          cudaSuccess)
    (void)cudaGetLastError();
  return out + "; the kernel allows " + std::to_string(a.maxDynamicSharedSizeBytes) +
         " bytes dynamic (" + std::to_string(a.sharedSizeBytes) + " static, the device " +
         std::to_string(optin) + " in all), " + std::to_string(a.maxThreadsPerBlock) +
         " threads a block, " + std::to_string(a.numRegs) + " registers a thread";
}

}  // namespace detail
}  // namespace stitch::kernels

// Evaluates a cudaError_t expression (or an int holding one, as the launch_* helpers return); on
// failure sets `error` and returns STITCH_ERROR_CUDA (STITCH_ERROR_OUT_OF_MEMORY for
// cudaErrorMemoryAllocation). The runtime's last-error slot is cleared too, so a reported
// (non-sticky) failure is not reported again by a later cudaGetLastError.
#define STITCH_CHECK_CUDA(expr)                                                                   \
  do {                                                                                            \
    const cudaError_t stitch_cuda_status_ = static_cast<cudaError_t>(expr);                       \
    if (stitch_cuda_status_ != cudaSuccess) {                                                     \
      (void)cudaGetLastError();                                                                   \
      error = ::stitch::kernels::detail::format_failure(__FILE__, __LINE__, #expr,                \
                                                        cudaGetErrorName(stitch_cuda_status_),    \
                                                        cudaGetErrorString(stitch_cuda_status_)); \
      return ::stitch::kernels::detail::status_of(stitch_cuda_status_);                           \
    }                                                                                             \
  } while (0)

// Evaluates a cublasStatus_t expression; on failure sets `error` and returns STITCH_ERROR_LIBRARY.
#define STITCH_CHECK_CUBLAS(expr)                                                  \
  do {                                                                             \
    const cublasStatus_t stitch_cublas_status_ = (expr);                           \
    if (stitch_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                          \
      error = ::stitch::kernels::detail::format_failure(                           \
          __FILE__, __LINE__, #expr, cublasLtGetStatusName(stitch_cublas_status_), \
          cublasLtGetStatusString(stitch_cublas_status_));                         \
      return STITCH_ERROR_LIBRARY;                                                 \
    }                                                                              \
  } while (0)

// After a <<<...>>> launch: configuration errors (too many threads, too much shared memory) only
// show up here. cudaGetLastError also clears them so they do not surface at an unrelated call.
#define STITCH_CHECK_LAUNCH() STITCH_CHECK_CUDA(cudaGetLastError())

// Propagates a non-zero int status from a helper that has already set `error`. Variadic: the
// expression may hold commas (a call of a member template with two template arguments).
#define STITCH_CHECK(...)                                               \
  do {                                                                  \
    const int stitch_check_status_ = (__VA_ARGS__);                     \
    if (stitch_check_status_ != STITCH_OK) return stitch_check_status_; \
  } while (0)

namespace stitch::kernels {

// What grid sizing needs to know about the current device. Queried once per device per process:
// cudaDeviceGetAttribute is cheap but not free, and launches happen on every forward call.
struct DeviceProperties {
  int sm_count = 0;
  int max_threads_per_sm = 0;
};

// Fills `props` for the current device. Returns cudaSuccess or the failing call's error. Safe to
// call while a stream is being captured (no stream work).
inline cudaError_t current_device_properties(DeviceProperties& props) {
  constexpr int kMaxDevices = 64;
  // Constant-initialised (no guard, no load-time constructor); a race only repeats the query and
  // stores the same values.
  static std::atomic<int> sm_counts[kMaxDevices];
  static std::atomic<int> threads_per_sm[kMaxDevices];
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return e;
  if (device >= 0 && device < kMaxDevices) {
    props.sm_count = sm_counts[device].load(std::memory_order_relaxed);
    props.max_threads_per_sm = threads_per_sm[device].load(std::memory_order_relaxed);
    if (props.sm_count > 0 && props.max_threads_per_sm > 0) return cudaSuccess;
  }
  e = cudaDeviceGetAttribute(&props.sm_count, cudaDevAttrMultiProcessorCount, device);
  if (e != cudaSuccess) return e;
  e = cudaDeviceGetAttribute(&props.max_threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor,
                             device);
  if (e != cudaSuccess) return e;
  if (device >= 0 && device < kMaxDevices) {
    sm_counts[device].store(props.sm_count, std::memory_order_relaxed);
    threads_per_sm[device].store(props.max_threads_per_sm, std::memory_order_relaxed);
  }
  return cudaSuccess;
}

// Grid for a grid-stride kernel: enough blocks for `work_items` (one item per thread), at most as
// many as the device keeps resident at once (one full wave), so every block stays busy and the
// loop covers the rest. `grid` is at least 1.
inline cudaError_t grid_stride_blocks(int64_t work_items, int block, int64_t& grid) {
  DeviceProperties props;
  const cudaError_t e = current_device_properties(props);
  if (e != cudaSuccess) return e;
  const int64_t resident =
      static_cast<int64_t>(props.sm_count) *
      (props.max_threads_per_sm / block > 0 ? props.max_threads_per_sm / block : 1);
  const int64_t needed = (work_items + block - 1) / block;
  grid = needed < resident ? needed : resident;
  if (grid < 1) grid = 1;
  return cudaSuccess;
}

// Device memory for a program's intermediates: one cudaMalloc at init, sliced at 256-byte aligned
// offsets (what cuBLASLt and float4 loads want), so forward calls allocate nothing and graph
// captures see stable pointers. Offsets are planned with ArenaLayout.
class Arena {
 public:
  Arena() = default;
  ~Arena() { release(); }
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  Arena(Arena&& other) noexcept
      : base_(std::exchange(other.base_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  Arena& operator=(Arena&& other) noexcept {
    if (this != &other) {
      release();
      base_ = std::exchange(other.base_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }

  static constexpr size_t kAlignment = 256;
  static constexpr size_t align(size_t bytes) {
    return (bytes + kAlignment - 1) / kAlignment * kAlignment;
  }

  // Makes at least `bytes` available. A second call that asks for no more than is held keeps the
  // allocation; a larger one frees it and allocates anew (earlier at() pointers, and graphs that
  // captured them, are then stale). Returns STITCH_OK, or STITCH_ERROR_OUT_OF_MEMORY /
  // STITCH_ERROR_CUDA with `error` set.
  int reserve(size_t bytes, std::string& error) {
    if (bytes <= bytes_ && base_ != nullptr) return STITCH_OK;
    release();
    if (bytes == 0) return STITCH_OK;
    void* p = nullptr;
    const size_t rounded = align(bytes);
    STITCH_CHECK_CUDA(cudaMalloc(&p, rounded));
    base_ = p;
    bytes_ = rounded;
    return STITCH_OK;
  }

  // The slice at `offset`; nullptr when nothing is reserved or the offset lies past the end.
  void* at(size_t offset) const {
    if (base_ == nullptr || offset > bytes_) return nullptr;
    return static_cast<char*>(base_) + offset;
  }
  size_t bytes() const { return bytes_; }

 private:
  void release() {
    if (base_ != nullptr) cudaFree(base_);  // only fails for an invalid pointer or a dead context
    base_ = nullptr;
    bytes_ = 0;
  }

  void* base_ = nullptr;
  size_t bytes_ = 0;
};

// Plans Arena offsets: each take() returns the next 256-byte aligned offset.
class ArenaLayout {
 public:
  size_t take(size_t bytes) {
    const size_t offset = total_;
    total_ += Arena::align(bytes);
    return offset;
  }
  size_t total() const { return total_; }

 private:
  size_t total_ = 0;
};

// Zeroed device scratch for timing a subtask's engines at stitch_init, where the program's own
// operands may not exist yet: float buffers planned one after another (add), then allocated and
// zeroed on `stream` (allocate); the destructor waits for `stream` and frees them. Synchronises
// `stream`; for stitch_init only.
class InitScratch {
 public:
  explicit InitScratch(cudaStream_t stream) : stream_(stream) {}
  InitScratch(const InitScratch&) = delete;
  InitScratch& operator=(const InitScratch&) = delete;
  ~InitScratch() {
    if (arena_.bytes() > 0) cudaStreamSynchronize(stream_);  // then arena_ frees the buffers
  }

  // Plans a buffer of `floats` floats; its handle for at() (none when `floats` is 0).
  int add(int64_t floats) {
    buffers_.push_back({layout_.take(static_cast<size_t>(floats) * sizeof(float)), floats > 0});
    return static_cast<int>(buffers_.size()) - 1;
  }
  int allocate(std::string& error) {
    if (layout_.total() == 0) return STITCH_OK;
    STITCH_CHECK(arena_.reserve(layout_.total(), error));
    const cudaError_t zeroed = cudaMemsetAsync(arena_.at(0), 0, layout_.total(), stream_);
    if (zeroed != cudaSuccess) {
      error = detail::format_failure(__FILE__, __LINE__, "cudaMemsetAsync(scratch)",
                                     cudaGetErrorName(zeroed), cudaGetErrorString(zeroed));
      return STITCH_ERROR_CUDA;
    }
    return STITCH_OK;
  }
  // Buffer `handle` after allocate(); nullptr for an empty one.
  float* at(int handle) const {
    const Buffer& buffer = buffers_[handle];
    return buffer.used ? static_cast<float*>(arena_.at(buffer.offset)) : nullptr;
  }

 private:
  struct Buffer {
    size_t offset = 0;
    bool used = false;
  };
  cudaStream_t stream_;
  ArenaLayout layout_;
  Arena arena_;
  std::vector<Buffer> buffers_;
};

// Replays CUDA graphs of a forward call, keyed by the pointers it was given (inputs, outputs,
// workspace...). A key must include everything that changes the recorded work: values baked into
// launches (shapes) that may vary belong in the key too, e.g. cast to pointers.
//
// run(): a hit launches the cached graph on `stream`; a miss captures record(stream) into a new
// graph (thread-local capture mode, so other threads' CUDA calls are unaffected), instantiates it,
// keeps it (least recently used evicted beyond `capacity`) and launches it. When capture cannot be
// used — graphs disabled, the legacy default stream (cannot be captured), a stream that is already
// being captured by the caller (the work then lands in the caller's graph), or a capture that
// failed — record(stream) runs directly; a failed capture also disables graphs for later calls.
class GraphCache {
 public:
  explicit GraphCache(int capacity = 16) : capacity_(capacity > 0 ? capacity : 1) {}
  ~GraphCache() { clear(); }
  GraphCache(const GraphCache&) = delete;
  GraphCache& operator=(const GraphCache&) = delete;
  GraphCache(GraphCache&& other) noexcept
      : entries_(std::move(other.entries_)),
        capacity_(other.capacity_),
        tick_(other.tick_),
        enabled_(other.enabled_) {
    other.entries_.clear();
  }
  GraphCache& operator=(GraphCache&& other) noexcept {
    if (this != &other) {
      clear();
      entries_ = std::move(other.entries_);
      other.entries_.clear();
      capacity_ = other.capacity_;
      tick_ = other.tick_;
      enabled_ = other.enabled_;
    }
    return *this;
  }

  bool enabled() const { return enabled_; }
  void set_enabled(bool enabled) { enabled_ = enabled; }
  int size() const { return static_cast<int>(entries_.size()); }
  int capacity() const { return capacity_; }

  // Destroys every cached graph (an in-flight launch completes first: CUDA frees it then).
  void clear() {
    for (Entry& entry : entries_)
      if (entry.exec != nullptr) cudaGraphExecDestroy(entry.exec);
    entries_.clear();
  }

  // `record(stream)` enqueues the forward work on `stream` and returns an int status (STITCH_OK or
  // an error with `error` set). Returns STITCH_OK or an error code with `error` set.
  template <class Record>
  int run(const void* const* pointers, int count, cudaStream_t stream, Record&& record,
          std::string& error) {
    if (!enabled_ || stream == nullptr || stream == cudaStreamLegacy) return record(stream);
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    STITCH_CHECK_CUDA(cudaStreamIsCapturing(stream, &capturing));
    if (capturing != cudaStreamCaptureStatusNone) return record(stream);

    std::vector<const void*> key(pointers, pointers + (count > 0 ? count : 0));
    for (Entry& entry : entries_) {
      if (entry.key != key) continue;
      entry.last_use = ++tick_;
      STITCH_CHECK_CUDA(cudaGraphLaunch(entry.exec, stream));
      return STITCH_OK;
    }

    cudaGraphExec_t exec = nullptr;
    if (!capture(stream, record, exec)) {
      // Capture is not possible for this program: remember it and run the work directly. The
      // error text of the failed attempt is dropped; a genuine failure repeats below.
      enabled_ = false;
      error.clear();
      return record(stream);
    }
    if (static_cast<int>(entries_.size()) >= capacity_) evict_least_recent();
    entries_.push_back(Entry{std::move(key), exec, ++tick_});
    STITCH_CHECK_CUDA(cudaGraphLaunch(exec, stream));
    return STITCH_OK;
  }

 private:
  struct Entry {
    std::vector<const void*> key;
    cudaGraphExec_t exec = nullptr;
    uint64_t last_use = 0;
  };

  // Captures record(stream) and instantiates it; false (with the capture ended and any error it
  // left cleared) when any step fails.
  template <class Record>
  static bool capture(cudaStream_t stream, Record& record, cudaGraphExec_t& exec) {
    if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    const int status = record(stream);
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    bool ok = status == STITCH_OK && ended == cudaSuccess && graph != nullptr;
    if (ok) ok = cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
    if (graph != nullptr) cudaGraphDestroy(graph);
    if (!ok) {
      exec = nullptr;
      (void)cudaGetLastError();  // capture errors are not sticky: clear what the attempt left
    }
    return ok;
  }

  void evict_least_recent() {
    size_t oldest = 0;
    for (size_t i = 1; i < entries_.size(); ++i)
      if (entries_[i].last_use < entries_[oldest].last_use) oldest = i;
    cudaGraphExecDestroy(entries_[oldest].exec);
    entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(oldest));
  }

  std::vector<Entry> entries_;
  int capacity_ = 16;
  uint64_t tick_ = 0;
  bool enabled_ = true;
};

}  // namespace stitch::kernels
