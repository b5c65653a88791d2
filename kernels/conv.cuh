// FP32 convolution through cuDNN 9's graph (backend) API: 1-D to 3-D (1-D as 2-D with a unit
// height), stride, padding before and after (asymmetric), dilation, groups (depthwise included),
// and transposed convolution as the backward-data convolution of the forward one it inverts.
// Tensors are NCHW / NCDHW contiguous, or, for a forward convolution inside a plan's
// channels-last region (src/plan/layout.h), x and / or y channels-last (NHWC, NLC, NDHWC: channel
// stride 1, ConvShape::x_channels_last / y_channels_last), which cuDNN's NHWC engines read and
// write without a transpose; weights as PyTorch holds them: [out, in / groups, k...] forward,
// [in, out / groups, k...] transposed (cuDNN's filter of the forward convolution either way).
//
// Math: strict_fp32 keeps the engines that compute in FP32 throughout: no TF32 tensor cores, no
// inputs converted down, no reduced-precision reduction. FFT and Winograd engines (FP32 transforms,
// errors near FP32 rounding: PyTorch's own strict-FP32 convolutions use them) and non-deterministic
// ones (split reductions in another order) stay: the fp32 track judges the error a program
// achieves, by its norm. tf32 also allows tensor-core engines (TF32 on FP32 data).
//
// Life cycle, as LtMatmul's: init (descriptors; up to kMaxCandidates execution plans from the
// heuristics that finalize and fit the workspace) → tune (optional: times each candidate on the
// given buffers, keeps the fastest; synchronises, so not while capturing) → run (no allocation,
// no synchronisation: CUDA-graph capturable). tune_conv_on_scratch tunes at a program's init, where
// the convolution's input may not exist yet; CudnnHandle owns the handle.
#pragma once

#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdint>
#include <string>

#include "runtime.cuh"

// Returns STITCH_ERROR_LIBRARY with `error` naming the call and cuDNN's status and last message.
#define STITCH_CHECK_CUDNN(expr)                                                          \
  do {                                                                                    \
    const cudnnStatus_t stitch_cudnn_status_ = (expr);                                    \
    if (stitch_cudnn_status_ != CUDNN_STATUS_SUCCESS) {                                   \
      char stitch_cudnn_last_[512] = {0};                                                 \
      cudnnGetLastErrorString(stitch_cudnn_last_, sizeof(stitch_cudnn_last_));            \
      error = ::stitch::kernels::detail::format_failure(                                  \
          __FILE__, __LINE__, #expr, cudnnGetErrorString(stitch_cudnn_status_),           \
          stitch_cudnn_last_);                                                            \
      return STITCH_ERROR_LIBRARY;                                                        \
    }                                                                                     \
  } while (0)

namespace stitch::kernels {

struct ConvShape {
  int spatial = 2;  // 1, 2 or 3
  int64_t batch = 1, in_channels = 0, out_channels = 0, groups = 1;
  // Spatial sizes of x and y (y's as the caller allocated it: for a transposed convolution it
  // includes output_padding), of the kernel, and the convolution's parameters, first `spatial`.
  int64_t input[3] = {1, 1, 1}, output[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, pad_before[3] = {0, 0, 0}, pad_after[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};
  bool transposed = false;
  // What every x / w / y pointer passed to run is aligned to (bytes; a power of two >= 4): engines
  // that need more are not chosen. Generated programs promise 16 (arena slots, params and
  // caller tensors are; the planner clones misaligned views).
  int64_t alignment = 4;
  // y is a window of whole channels of a larger buffer (a cat's piece): its images y_image floats
  // apart, each dense. 0: y dense.
  int64_t y_image = 0;
  // x / y dense channels-last (channel stride 1) rather than NCDHW; forward only, y dense.
  bool x_channels_last = false, y_channels_last = false;
};

enum class ConvMath { strict_fp32, tf32 };

namespace detail {

// One backend descriptor, destroyed with its owner.
class CudnnDescriptor {
 public:
  CudnnDescriptor() = default;
  ~CudnnDescriptor() { reset(); }
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;
  CudnnDescriptor(CudnnDescriptor&& other) noexcept : d_(other.d_) { other.d_ = nullptr; }
  CudnnDescriptor& operator=(CudnnDescriptor&& other) noexcept {
    if (this != &other) {
      reset();
      d_ = other.d_;
      other.d_ = nullptr;
    }
    return *this;
  }
  cudnnStatus_t create(cudnnBackendDescriptorType_t type) {
    reset();
    return cudnnBackendCreateDescriptor(type, &d_);
  }
  void reset() {
    if (d_ != nullptr) cudnnBackendDestroyDescriptor(d_);
    d_ = nullptr;
  }
  cudnnBackendDescriptor_t get() const { return d_; }

  template <class T>
  cudnnStatus_t set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                    int64_t count, const T* values) {
    return cudnnBackendSetAttribute(d_, name, type, count, values);
  }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

inline constexpr int64_t kConvX = 1, kConvW = 2, kConvY = 3;  // tensor unique ids

// The dims cuDNN is given: 1-D becomes 2-D with a unit height (it wants at least 4-D tensors).
struct ConvDims {
  int rank = 4;  // 2 + spatial dims
  int64_t x[5], w[5], y[5];
  int64_t stride[3], pad_before[3], pad_after[3], dilation[3];
};

inline ConvDims conv_dims(const ConvShape& s) {
  ConvDims d;
  const int spatial = s.spatial == 1 ? 2 : s.spatial;
  d.rank = 2 + spatial;
  const int64_t w_in = s.transposed ? s.out_channels / s.groups : s.in_channels / s.groups;
  const int64_t w_out = s.transposed ? s.in_channels : s.out_channels;
  d.x[0] = s.batch, d.x[1] = s.in_channels;
  d.y[0] = s.batch, d.y[1] = s.out_channels;
  d.w[0] = w_out, d.w[1] = w_in;
  for (int i = 0; i < spatial; ++i) {
    const int src = s.spatial == 1 ? i - 1 : i;  // 1-D: the unit height first
    const bool unit = src < 0;
    d.x[2 + i] = unit ? 1 : s.input[src];
    d.y[2 + i] = unit ? 1 : s.output[src];
    d.w[2 + i] = unit ? 1 : s.kernel[src];
    d.stride[i] = unit ? 1 : s.stride[src];
    d.pad_before[i] = unit ? 0 : s.pad_before[src];
    d.pad_after[i] = unit ? 0 : s.pad_after[src];
    d.dilation[i] = unit ? 1 : s.dilation[src];
  }
  return d;
}

// "" when the shape is one this header runs, else what is wrong with it.
inline std::string conv_shape_problem(const ConvShape& s) {
  if (s.spatial < 1 || s.spatial > 3) return "spatial dims must be 1, 2 or 3";
  if (s.batch <= 0 || s.in_channels <= 0 || s.out_channels <= 0 || s.groups <= 0)
    return "batch, channels and groups must be positive";
  if (s.in_channels % s.groups != 0 || s.out_channels % s.groups != 0)
    return "channels must be divisible by groups";
  for (int i = 0; i < s.spatial; ++i) {
    if (s.input[i] <= 0 || s.output[i] <= 0 || s.kernel[i] <= 0 || s.stride[i] <= 0 ||
        s.dilation[i] <= 0 || s.pad_before[i] < 0 || s.pad_after[i] < 0)
      return "sizes, strides and dilations must be positive, paddings non-negative";
    // The forward convolution (of y, when transposed) must give exactly the other tensor's size.
    const int64_t from = s.transposed ? s.output[i] : s.input[i];
    const int64_t to = s.transposed ? s.input[i] : s.output[i];
    const int64_t span = s.dilation[i] * (s.kernel[i] - 1) + 1;
    if ((from + s.pad_before[i] + s.pad_after[i] - span) / s.stride[i] + 1 != to)
      return "output size does not follow from input, kernel, stride, padding and dilation";
  }
  int64_t y_image = s.out_channels;
  for (int i = 0; i < s.spatial; ++i)
    y_image *= s.output[i];
  if (s.y_image != 0 && s.y_image < y_image) return "y's images must lie at least one image apart";
  if ((s.x_channels_last || s.y_channels_last) && s.transposed)
    return "a transposed convolution reads and writes NCDHW";
  if (s.y_channels_last && s.y_image != 0) return "a channels-last y is dense";
  return "";
}

inline void contiguous_strides(const int64_t* dims, int rank, int64_t* strides) {
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= dims[i];
  }
}

// The strides of dense [N, C, spatial...] `dims` stored channels-last: C fastest, then the
// spatial dims last to first, N slowest.
inline void channels_last_strides(const int64_t* dims, int rank, int64_t* strides) {
  strides[1] = 1;
  int64_t stride = dims[1];
  for (int i = rank - 1; i >= 2; --i) {
    strides[i] = stride;
    stride *= dims[i];
  }
  strides[0] = stride;
}

// Engines whose numerical notes the math forbids: arithmetic below FP32 (see the file comment).
inline bool engine_allowed(cudnnBackendDescriptor_t engine, ConvMath math) {
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t count = 0;
  if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count,
                               notes) != CUDNN_STATUS_SUCCESS)
    return false;
  for (int64_t i = 0; i < count; ++i) {
    switch (notes[i]) {
      case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
        if (math != ConvMath::tf32) return false;
        break;
      case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
      case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
        return false;
      default:  // FFT, Winograd, non-deterministic, strict NaN propagation: FP32 arithmetic
        break;
    }
  }
  return true;
}

}  // namespace detail

class CudnnConv {
 public:
  static constexpr int kMaxCandidates = 8;

  CudnnConv() = default;
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  // Describes the convolution and keeps the heuristics' first kMaxCandidates execution plans that
  // the math allows and whose workspace fits `workspace_limit`. Returns STITCH_OK, or
  // STITCH_ERROR_INVALID_ARGUMENT / STITCH_ERROR_LIBRARY with `error` set.
  int init(cudnnHandle_t handle, const ConvShape& shape, ConvMath math, size_t workspace_limit,
           std::string& error) {
    if (handle == nullptr) {
      error = "CudnnConv::init: null cuDNN handle";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    if (shape.alignment < 4 || (shape.alignment & (shape.alignment - 1)) != 0) {
      error = "CudnnConv::init: alignment must be a power of two of at least 4 bytes";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    if (std::string bad = detail::conv_shape_problem(shape); !bad.empty()) {
      error = "CudnnConv::init: " + bad;
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    handle_ = handle;
    shape_ = shape;
    count_ = 0;
    chosen_ = 0;
    const detail::ConvDims dims = detail::conv_dims(shape);
    detail::CudnnDescriptor x, w, y, conv, op, graph;
    int status =
        make_tensor(x, detail::kConvX, dims.x, dims.rank, error, 0, shape.x_channels_last);
    if (status == STITCH_OK) status = make_tensor(w, detail::kConvW, dims.w, dims.rank, error);
    if (status == STITCH_OK)
      status = make_tensor(y, detail::kConvY, dims.y, dims.rank, error, shape.y_image,
                           shape.y_channels_last);
    if (status == STITCH_OK) status = make_convolution(conv, dims, error);
    if (status == STITCH_OK) status = make_operation(op, x, w, y, conv, error);
    if (status == STITCH_OK) status = make_graph(graph, op, error);
    if (status == STITCH_OK) status = make_plans(graph, math, workspace_limit, error);
    if (status == STITCH_OK && count_ == 0) {
      error = "CudnnConv::init: cuDNN has no engine for this convolution under " +
              std::string(math == ConvMath::tf32 ? "TF32" : "strict FP32") + " math within " +
              std::to_string(workspace_limit) + " B of workspace";
      status = STITCH_ERROR_LIBRARY;
    }
    return status;
  }

  // Times every candidate (one warm-up, then `iterations` runs, CUDA events on `stream`) on the
  // given buffers (y is overwritten) and keeps the fastest.
  int tune(const float* x, const float* w, float* y, void* workspace, cudaStream_t stream,
           std::string& error, int iterations = 3) {
    cudaEvent_t start = nullptr, stop = nullptr;
    STITCH_CHECK_CUDA(cudaEventCreate(&start));
    STITCH_CHECK_CUDA(cudaEventCreate(&stop));
    float best_ms = -1;
    int best = chosen_;
    for (int candidate = 0; candidate < count_; ++candidate) {
      int status = execute(candidate, x, w, y, workspace, stream, error);
      for (int i = 0; status == STITCH_OK && i < iterations; ++i) {
        if (i == 0) cudaEventRecord(start, stream);
        status = execute(candidate, x, w, y, workspace, stream, error);
      }
      if (status != STITCH_OK) continue;  // an engine that fails at run time is not chosen
      cudaEventRecord(stop, stream);
      cudaEventSynchronize(stop);
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      if (best_ms < 0 || ms < best_ms) best_ms = ms, best = candidate;
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    if (best_ms < 0) {
      error = "CudnnConv::tune: no candidate engine ran: " + error;
      return STITCH_ERROR_LIBRARY;
    }
    error.clear();
    chosen_ = best;
    tuned_ms_ = best_ms / static_cast<float>(iterations);
    return STITCH_OK;
  }

  // y = conv(x, w) (transposed: y = conv_transpose(x, w)) on `stream`.
  int run(const float* x, const float* w, float* y, void* workspace, cudaStream_t stream,
          std::string& error) const {
    if (count_ == 0) {
      error = "CudnnConv::run before a successful init";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    return execute(chosen_, x, w, y, workspace, stream, error);
  }

  // The workspace the chosen plan needs (bytes; run's `workspace` must hold it).
  size_t workspace_bytes() const { return count_ > 0 ? workspace_[chosen_] : 0; }
  int candidates() const { return count_; }
  float tuned_ms() const { return tuned_ms_; }

 private:
  // image_stride: the images' distance where it is not the dense one (0); channels_last: dense
  // with channel stride 1.
  int make_tensor(detail::CudnnDescriptor& t, int64_t uid, const int64_t* dims, int rank,
                  std::string& error, int64_t image_stride = 0, bool channels_last = false) {
    int64_t strides[5];
    if (channels_last)
      detail::channels_last_strides(dims, rank, strides);
    else
      detail::contiguous_strides(dims, rank, strides);
    if (image_stride != 0) strides[0] = image_stride;
    const cudnnDataType_t type = CUDNN_DATA_FLOAT;
    const int64_t alignment = shape_.alignment;
    STITCH_CHECK_CUDNN(t.create(CUDNN_BACKEND_TENSOR_DESCRIPTOR));
    STITCH_CHECK_CUDNN(t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type));
    STITCH_CHECK_CUDNN(t.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, rank, dims));
    STITCH_CHECK_CUDNN(t.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, rank, strides));
    STITCH_CHECK_CUDNN(t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
    STITCH_CHECK_CUDNN(t.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment));
    STITCH_CHECK_CUDNN(cudnnBackendFinalize(t.get()));
    return STITCH_OK;
  }

  int make_convolution(detail::CudnnDescriptor& conv, const detail::ConvDims& dims,
                       std::string& error) {
    const int64_t spatial = dims.rank - 2;
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;  // PyTorch's convolution
    STITCH_CHECK_CUDNN(conv.create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR));
    STITCH_CHECK_CUDNN(conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute));
    STITCH_CHECK_CUDNN(
        conv.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
    STITCH_CHECK_CUDNN(conv.set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial));
    STITCH_CHECK_CUDNN(
        conv.set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, spatial, dims.dilation));
    STITCH_CHECK_CUDNN(
        conv.set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, spatial, dims.stride));
    STITCH_CHECK_CUDNN(
        conv.set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, spatial, dims.pad_before));
    STITCH_CHECK_CUDNN(
        conv.set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, spatial, dims.pad_after));
    STITCH_CHECK_CUDNN(cudnnBackendFinalize(conv.get()));
    return STITCH_OK;
  }

  // Forward: X → Y. Transposed: the backward-data convolution with DY = x and DX = y.
  int make_operation(detail::CudnnDescriptor& op, detail::CudnnDescriptor& x,
                     detail::CudnnDescriptor& w, detail::CudnnDescriptor& y,
                     detail::CudnnDescriptor& conv, std::string& error) {
    const float alpha = 1.0f, beta = 0.0f;
    const bool transposed = shape_.transposed;
    STITCH_CHECK_CUDNN(op.create(transposed
                                     ? CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR
                                     : CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR));
    auto set_desc = [&](cudnnBackendAttributeName_t name, detail::CudnnDescriptor& d) {
      cudnnBackendDescriptor_t raw = d.get();
      return op.set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
    };
    if (transposed) {
      STITCH_CHECK_CUDNN(set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, x));
      STITCH_CHECK_CUDNN(set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, w));
      STITCH_CHECK_CUDNN(set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, y));
      STITCH_CHECK_CUDNN(set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, conv));
      STITCH_CHECK_CUDNN(
          op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha));
      STITCH_CHECK_CUDNN(
          op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, 1, &beta));
    } else {
      STITCH_CHECK_CUDNN(set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x));
      STITCH_CHECK_CUDNN(set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w));
      STITCH_CHECK_CUDNN(set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y));
      STITCH_CHECK_CUDNN(set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv));
      STITCH_CHECK_CUDNN(
          op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha));
      STITCH_CHECK_CUDNN(
          op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta));
    }
    STITCH_CHECK_CUDNN(cudnnBackendFinalize(op.get()));
    return STITCH_OK;
  }

  int make_graph(detail::CudnnDescriptor& graph, detail::CudnnDescriptor& op, std::string& error) {
    cudnnBackendDescriptor_t raw = op.get();
    STITCH_CHECK_CUDNN(graph.create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
    STITCH_CHECK_CUDNN(graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw));
    STITCH_CHECK_CUDNN(graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_));
    STITCH_CHECK_CUDNN(cudnnBackendFinalize(graph.get()));
    return STITCH_OK;
  }

  // The heuristics' engine configurations, in their order, that the math allows, finalize into a
  // plan, and fit the workspace.
  int make_plans(detail::CudnnDescriptor& graph, ConvMath math, size_t workspace_limit,
                 std::string& error) {
    constexpr int kAsked = 32;  // heuristic results read; most are filtered out under strict FP32
    detail::CudnnDescriptor heuristics;
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    cudnnBackendDescriptor_t raw_graph = graph.get();
    STITCH_CHECK_CUDNN(heuristics.create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR));
    STITCH_CHECK_CUDNN(heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw_graph));
    STITCH_CHECK_CUDNN(heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
    STITCH_CHECK_CUDNN(cudnnBackendFinalize(heuristics.get()));
    detail::CudnnDescriptor configs[kAsked];
    cudnnBackendDescriptor_t raw_configs[kAsked];
    for (int i = 0; i < kAsked; ++i) {
      STITCH_CHECK_CUDNN(configs[i].create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
      raw_configs[i] = configs[i].get();
    }
    int64_t returned = 0;
    STITCH_CHECK_CUDNN(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                CUDNN_TYPE_BACKEND_DESCRIPTOR, kAsked, &returned,
                                                raw_configs));
    for (int64_t i = 0; i < returned && count_ < kMaxCandidates; ++i) {
      detail::CudnnDescriptor engine;
      STITCH_CHECK_CUDNN(engine.create(CUDNN_BACKEND_ENGINE_DESCRIPTOR));
      cudnnBackendDescriptor_t raw_engine = engine.get();
      int64_t one = 0;
      if (cudnnBackendGetAttribute(raw_configs[i], CUDNN_ATTR_ENGINECFG_ENGINE,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &one,
                                   &raw_engine) != CUDNN_STATUS_SUCCESS ||
          !detail::engine_allowed(raw_engine, math))
        continue;
      detail::CudnnDescriptor plan;
      STITCH_CHECK_CUDNN(plan.create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR));
      STITCH_CHECK_CUDNN(plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_));
      STITCH_CHECK_CUDNN(plan.set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw_configs[i]));
      if (cudnnBackendFinalize(plan.get()) != CUDNN_STATUS_SUCCESS) continue;  // not supported
      int64_t bytes = 0;
      if (cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                   CUDNN_TYPE_INT64, 1, &one, &bytes) != CUDNN_STATUS_SUCCESS ||
          bytes < 0 || static_cast<size_t>(bytes) > workspace_limit)
        continue;
      plans_[count_] = std::move(plan);
      workspace_[count_] = static_cast<size_t>(bytes);
      ++count_;
    }
    return STITCH_OK;
  }

  int execute(int candidate, const float* x, const float* w, float* y, void* workspace,
              cudaStream_t stream, std::string& error) const {
    if (workspace_[candidate] > 0 && workspace == nullptr) {
      error = "CudnnConv: null workspace for a plan that needs " +
              std::to_string(workspace_[candidate]) + " B";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    STITCH_CHECK_CUDNN(cudnnSetStream(handle_, stream));
    void* pointers[3] = {const_cast<float*>(x), const_cast<float*>(w), y};
    const int64_t uids[3] = {detail::kConvX, detail::kConvW, detail::kConvY};
    detail::CudnnDescriptor pack;
    STITCH_CHECK_CUDNN(pack.create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR));
    STITCH_CHECK_CUDNN(pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids));
    STITCH_CHECK_CUDNN(pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers));
    STITCH_CHECK_CUDNN(pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace));
    STITCH_CHECK_CUDNN(cudnnBackendFinalize(pack.get()));
    STITCH_CHECK_CUDNN(cudnnBackendExecute(handle_, plans_[candidate].get(), pack.get()));
    return STITCH_OK;
  }

  cudnnHandle_t handle_ = nullptr;
  ConvShape shape_;
  detail::CudnnDescriptor plans_[kMaxCandidates];
  size_t workspace_[kMaxCandidates] = {};
  int count_ = 0;
  int chosen_ = 0;
  float tuned_ms_ = -1;
};

// A cuDNN handle owned by a program's state, destroyed after the convolutions that use it (declare
// it before them).
class CudnnHandle {
 public:
  CudnnHandle() = default;
  CudnnHandle(const CudnnHandle&) = delete;
  CudnnHandle& operator=(const CudnnHandle&) = delete;
  ~CudnnHandle() {
    if (handle_ != nullptr) cudnnDestroy(handle_);
  }
  int create(std::string& error) {
    if (handle_ == nullptr) STITCH_CHECK_CUDNN(cudnnCreate(&handle_));
    return STITCH_OK;
  }
  cudnnHandle_t get() const { return handle_; }

 private:
  cudnnHandle_t handle_ = nullptr;
};

// Elements of x, w and y of a convolution (sizes as ConvShape holds them).
inline void conv_elements(const ConvShape& s, int64_t& x, int64_t& w, int64_t& y) {
  x = s.batch * s.in_channels;
  y = s.batch * s.out_channels;
  w = s.transposed ? s.in_channels * (s.out_channels / s.groups)
                   : s.out_channels * (s.in_channels / s.groups);
  for (int i = 0; i < s.spatial; ++i) {
    x *= s.input[i];
    y *= s.output[i];
    w *= s.kernel[i];
  }
}

// The floats a buffer holding y needs: y dense, or its images y_image apart.
inline int64_t conv_y_footprint(const ConvShape& s) {
  int64_t x = 0, w = 0, y = 0;
  conv_elements(s, x, w, y);
  return s.y_image != 0 ? (s.batch - 1) * s.y_image + y / s.batch : y;
}

// Times the candidates of an initialised CudnnConv on zeroed scratch buffers of its operands'
// sizes, allocated here and freed before returning (the program's own x may be an input that
// does not exist at init). Synchronises `stream`; for stitch_init only.
inline int tune_conv_on_scratch(CudnnConv& conv, const ConvShape& shape, void* workspace,
                                cudaStream_t stream, std::string& error, int iterations = 3) {
  int64_t x = 0, w = 0, y = 0;
  conv_elements(shape, x, w, y);
  InitScratch scratch(stream);
  const int sx = scratch.add(x), sw = scratch.add(w), sy = scratch.add(conv_y_footprint(shape));
  STITCH_CHECK(scratch.allocate(error));
  return conv.tune(scratch.at(sx), scratch.at(sw), scratch.at(sy), workspace, stream, error,
                   iterations);
}

}  // namespace stitch::kernels
