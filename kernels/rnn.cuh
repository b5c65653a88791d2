// Recurrent networks — LSTM, GRU and the Elman RNN (tanh or ReLU) — multi-layer, uni- or
// bidirectional, through cuDNN 9's RNN API (cudnn_adv: cudnnRNNForward in inference mode).
// Semantics are PyTorch's nn.LSTM / nn.GRU / nn.RNN (aten.lstm.input, aten.gru.input,
// aten.rnn_tanh.input, aten.rnn_relu.input), which PyTorch itself runs through this API:
//   x   [T, B, I] (batch_first: [B, T, I]), contiguous
//   hx  [layers * directions, B, H] (LSTM also cx, the same shape); y [T, B, directions * H]
//   (batch_first: [B, T, ...]); hy, cy like hx (either may be null when not wanted).
// Parameters in PyTorch's order: for each layer, for each direction, w_ih [gates * H, in],
// w_hh [gates * H, H], then (with biases) b_ih [gates * H] and b_hh [gates * H]; `in` is I for
// layer 0 and directions * H above it. Gate order is PyTorch's and cuDNN's alike: LSTM (i, f, g,
// o), GRU (r, z, n), whose n = tanh(W_in x + b_in + r * (W_hn h + b_hn)) is cuDNN's GRU too.
//
// Math: strict_fp32 runs the recurrences with FP32 FMA only (CUDNN_FMA_MATH, as PyTorch with TF32
// off); tf32 lets cuDNN use TF32 tensor cores on the FP32 data (CUDNN_DEFAULT_MATH).
//
// Layout: cuDNN runs the sequence-major packed layout (all sequences full length; on the H200 the
// unpacked and batch-major layouts timed the same); batch_first x and y are transposed into and
// out of the workspace around it, as PyTorch does (cuDNN's batch-major layout needs padded I/O).
//
// Life cycle: init (descriptors for every algorithm cuDNN accepts at this shape: the standard one
// and the persistent kernels) → tune (optional: times each in a CUDA graph on scratch, keeps the
// fastest; synchronises) → load_weights (copies the parameters into the weight space cuDNN's
// chosen layout wants: once, at a program's init) → run (no allocation, no synchronisation:
// CUDA-graph capturable; `workspace` of workspace_bytes()).
#pragma once

#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "conv.cuh"  // STITCH_CHECK_CUDNN, CudnnHandle
#include "runtime.cuh"

namespace stitch::kernels {

enum class RnnCell { lstm, gru, rnn_tanh, rnn_relu };
enum class RnnMath { strict_fp32, tf32 };

struct RnnShape {
  RnnCell cell = RnnCell::lstm;
  int64_t seq_len = 0, batch = 0, input_size = 0, hidden_size = 0;
  int layers = 1;
  bool bidirectional = false;
  bool batch_first = false;
  bool has_biases = true;
};

inline RnnShape rnn_shape(RnnCell cell, int64_t seq_len, int64_t batch, int64_t input_size,
                          int64_t hidden_size, int layers, bool bidirectional = false,
                          bool batch_first = false, bool has_biases = true) {
  RnnShape s;
  s.cell = cell;
  s.seq_len = seq_len;
  s.batch = batch;
  s.input_size = input_size;
  s.hidden_size = hidden_size;
  s.layers = layers;
  s.bidirectional = bidirectional;
  s.batch_first = batch_first;
  s.has_biases = has_biases;
  return s;
}

// Matrices per direction and layer in each of w_ih and w_hh: LSTM 4, GRU 3, Elman 1.
inline int rnn_gates(RnnCell cell) {
  return cell == RnnCell::lstm ? 4 : cell == RnnCell::gru ? 3 : 1;
}
inline int rnn_directions(const RnnShape& s) {
  return s.bidirectional ? 2 : 1;
}

// How many parameter tensors PyTorch's flat list holds (what load_weights reads).
inline int rnn_param_count(const RnnShape& s) {
  return s.layers * rnn_directions(s) * (s.has_biases ? 4 : 2);
}

// Elements of PyTorch's parameter `index` (its flat order above).
inline int64_t rnn_param_elements(const RnnShape& s, int index) {
  const int per_direction = s.has_biases ? 4 : 2;
  const int layer = index / (per_direction * rnn_directions(s));
  const int which = index % per_direction;  // 0 w_ih, 1 w_hh, 2 b_ih, 3 b_hh
  const int64_t rows = rnn_gates(s.cell) * s.hidden_size;
  const int64_t in = layer == 0 ? s.input_size : rnn_directions(s) * s.hidden_size;
  return which == 0 ? rows * in : which == 1 ? rows * s.hidden_size : rows;
}

namespace detail {

// out[b, a, :] = in[a, b, :] for in [A, B, F]: swaps the two outer dimensions (rows of F stay
// contiguous, so reads and writes are coalesced along F).
__global__ void swap_outer_dims_kernel(const float* __restrict__ in, float* __restrict__ out,
                                       int64_t a_count, int64_t b_count, int64_t features) {
  const int64_t total = a_count * b_count * features;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t f = i % features;
    const int64_t row = i / features;  // row of `out`: b * A + a
    const int64_t a = row % a_count, b = row / a_count;
    out[i] = in[(a * b_count + b) * features + f];
  }
}

inline int swap_outer_dims(const float* in, float* out, int64_t a_count, int64_t b_count,
                           int64_t features, cudaStream_t stream) {
  const int64_t total = a_count * b_count * features;
  constexpr int kThreads = 256;
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  swap_outer_dims_kernel<<<static_cast<unsigned>(blocks < 65535 * 16 ? blocks : 65535 * 16),
                           kThreads, 0, stream>>>(in, out, a_count, b_count, features);
  return cudaGetLastError() == cudaSuccess ? STITCH_OK : STITCH_ERROR_CUDA;
}

inline std::string rnn_shape_problem(const RnnShape& s) {
  if (s.seq_len < 1 || s.batch < 1 || s.input_size < 1 || s.hidden_size < 1 || s.layers < 1)
    return "sequence length, batch, input size, hidden size and layers must be positive";
  const int64_t limit = 0x7fffffff;
  if (s.seq_len > limit || s.batch > limit || s.input_size > limit || s.hidden_size > limit)
    return "a dimension exceeds cuDNN's 32-bit sizes";
  return {};
}

inline cudnnRNNMode_t cudnn_cell(RnnCell cell) {
  switch (cell) {
    case RnnCell::lstm:
      return CUDNN_LSTM;
    case RnnCell::gru:
      return CUDNN_GRU;
    case RnnCell::rnn_tanh:
      return CUDNN_RNN_TANH;
    case RnnCell::rnn_relu:
      return CUDNN_RNN_RELU;
  }
  return CUDNN_LSTM;
}

}  // namespace detail

class CudnnRnn {
 public:
  static constexpr int kMaxCandidates = 3;

  CudnnRnn() = default;
  CudnnRnn(const CudnnRnn&) = delete;
  CudnnRnn& operator=(const CudnnRnn&) = delete;
  ~CudnnRnn() { release(); }

  // Describes the network for each algorithm cuDNN accepts at this shape and allocates the weight
  // space. Returns STITCH_OK, or STITCH_ERROR_INVALID_ARGUMENT / STITCH_ERROR_LIBRARY /
  // STITCH_ERROR_CUDA with `error` set.
  int init(cudnnHandle_t handle, const RnnShape& shape, RnnMath math, std::string& error) {
    if (handle == nullptr) {
      error = "CudnnRnn::init: null cuDNN handle";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    if (std::string bad = detail::rnn_shape_problem(shape); !bad.empty()) {
      error = "CudnnRnn::init: " + bad;
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    release();
    handle_ = handle;
    shape_ = shape;
    STITCH_CHECK_CUDNN(cudnnCreateDropoutDescriptor(&dropout_));
    STITCH_CHECK_CUDNN(cudnnSetDropoutDescriptor(dropout_, handle, 0.0f, nullptr, 0, 0));
    STITCH_CHECK(make_data_descriptors(error));
    const cudnnRNNAlgo_t algorithms[kMaxCandidates] = {CUDNN_RNN_ALGO_STANDARD,
                                                       CUDNN_RNN_ALGO_PERSIST_STATIC,
                                                       CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H};
    std::string first_refusal;
    for (cudnnRNNAlgo_t algorithm : algorithms) {
      std::string refusal;
      if (add_candidate(algorithm, math, refusal) != STITCH_OK && first_refusal.empty())
        first_refusal = refusal;
    }
    if (count_ == 0) {
      error = "CudnnRnn::init: cuDNN accepts no algorithm for this network: " + first_refusal;
      return STITCH_ERROR_LIBRARY;
    }
    size_t weight_bytes = 0;
    for (int c = 0; c < count_; ++c)
      weight_bytes =
          weight_bytes > candidates_[c].weight_bytes ? weight_bytes : candidates_[c].weight_bytes;
    STITCH_CHECK_CUDA(cudaMalloc(&weights_, weight_bytes));
    STITCH_CHECK_CUDA(cudaMemset(weights_, 0, weight_bytes));
    std::vector<int32_t> lengths(shape.batch, static_cast<int32_t>(shape.seq_len));
    STITCH_CHECK_CUDA(cudaMalloc(&device_lengths_, lengths.size() * sizeof(int32_t)));
    STITCH_CHECK_CUDA(cudaMemcpy(device_lengths_, lengths.data(), lengths.size() * sizeof(int32_t),
                                 cudaMemcpyHostToDevice));
    return STITCH_OK;
  }

  // Times each algorithm as a generated program runs it: one forward captured in a CUDA graph and
  // replayed (`iterations` replays after a warm-up), on zeroed scratch inputs and outputs allocated
  // here; keeps the fastest. Graphed, because launch overhead decides the order: the standard
  // algorithm launches kernels per step (at 35_LSTM's shape on the H200, 42 ms a forward eager
  // but 8.1 ms graphed, against the persistent kernel's 23 ms either way; graphed, it matches
  // PyTorch's own graphed cuDNN call, tests/kernels/rnn_bench.cu and rnn_torch_bench.py). An
  // algorithm that fails to run or to be captured is not chosen. Before load_weights (the weight
  // layout is the chosen algorithm's). `workspace` must hold max_workspace_bytes(). Waits for
  // `stream`, then runs on a stream of its own (a graph cannot be captured on the legacy default
  // stream) and synchronises.
  int tune(void* workspace, cudaStream_t stream, std::string& error, int iterations = 3) {
    if (count_ < 2) return STITCH_OK;
    const int64_t dirs = rnn_directions(shape_);
    const int64_t h_elements = shape_.layers * dirs * shape_.batch * shape_.hidden_size;
    const size_t h_bytes = Arena::align(h_elements * 4);
    const size_t bytes =
        Arena::align(x_elements() * 4) + Arena::align(y_elements() * 4) + 4 * h_bytes;
    STITCH_CHECK_CUDA(cudaStreamSynchronize(stream));
    cudaStream_t own = nullptr;
    STITCH_CHECK_CUDA(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking));
    char* scratch = nullptr;
    if (cudaMalloc(&scratch, bytes) != cudaSuccess ||
        cudaMemsetAsync(scratch, 0, bytes, own) != cudaSuccess) {
      cudaFree(scratch);
      cudaStreamDestroy(own);
      error = "CudnnRnn::tune: scratch set-up failed";
      return STITCH_ERROR_CUDA;
    }
    Buffers b;
    b.x = reinterpret_cast<float*>(scratch);
    b.y = reinterpret_cast<float*>(scratch + Arena::align(x_elements() * 4));
    b.h = reinterpret_cast<float*>(reinterpret_cast<char*>(b.y) + Arena::align(y_elements() * 4));
    b.c = reinterpret_cast<float*>(reinterpret_cast<char*>(b.h) + h_bytes);
    b.hy = reinterpret_cast<float*>(reinterpret_cast<char*>(b.c) + h_bytes);
    b.cy = reinterpret_cast<float*>(reinterpret_cast<char*>(b.hy) + h_bytes);
    float best_ms = -1;
    int best = chosen_;
    std::string why;
    for (int candidate = 0; candidate < count_; ++candidate) {
      const float ms = time_graphed(candidate, b, workspace, own, iterations, why);
      candidates_[candidate].tuned_ms = ms;
      if (ms >= 0 && (best_ms < 0 || ms < best_ms)) best_ms = ms, best = candidate;
    }
    cudaStreamSynchronize(own);
    cudaFree(scratch);
    cudaStreamDestroy(own);
    if (best_ms < 0) {
      error = "CudnnRnn::tune: no algorithm ran: " + why;
      return STITCH_ERROR_LIBRARY;
    }
    error.clear();
    chosen_ = best;
    tuned_ms_ = best_ms;
    return STITCH_OK;
  }

  // Copies PyTorch's parameters (params[i], device pointers, rnn_param_count of them in its flat
  // order) into the weight space, in the chosen algorithm's layout. Asynchronous on `stream`.
  int load_weights(const float* const* params, cudaStream_t stream, std::string& error) {
    if (count_ == 0) {
      error = "CudnnRnn::load_weights before a successful init";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    const int dirs = rnn_directions(shape_);
    const int gates = rnn_gates(shape_.cell);
    const int per_direction = shape_.has_biases ? 4 : 2;
    cudnnTensorDescriptor_t matrix = nullptr, bias = nullptr;
    STITCH_CHECK_CUDNN(cudnnCreateTensorDescriptor(&matrix));
    int status = cudnnCreateTensorDescriptor(&bias) == CUDNN_STATUS_SUCCESS ? STITCH_OK
                                                                            : STITCH_ERROR_LIBRARY;
    for (int layer = 0; status == STITCH_OK && layer < shape_.layers; ++layer) {
      for (int dir = 0; status == STITCH_OK && dir < dirs; ++dir) {
        const int first = (layer * dirs + dir) * per_direction;
        const int64_t in = layer == 0 ? shape_.input_size : dirs * shape_.hidden_size;
        // linLayerID g < gates: rows g of w_ih; gates + g: rows g of w_hh (and their biases).
        for (int id = 0; status == STITCH_OK && id < 2 * gates; ++id) {
          const bool recurrent = id >= gates;
          const int64_t gate = recurrent ? id - gates : id;
          const int64_t columns = recurrent ? shape_.hidden_size : in;
          const float* w =
              params[first + (recurrent ? 1 : 0)] + gate * shape_.hidden_size * columns;
          const float* b = shape_.has_biases
                               ? params[first + (recurrent ? 3 : 2)] + gate * shape_.hidden_size
                               : nullptr;
          status = copy_matrix(layer * dirs + dir, id, matrix, bias, w,
                               shape_.hidden_size * columns, b, stream, error);
        }
      }
    }
    cudnnDestroyTensorDescriptor(matrix);
    if (bias != nullptr) cudnnDestroyTensorDescriptor(bias);
    if (status == STITCH_ERROR_LIBRARY && error.empty())
      error = "CudnnRnn::load_weights: cudnnCreateTensorDescriptor failed";
    return status;
  }

  // y (and hy, cy where not null) from x and the initial states hx, cx (cx: LSTM only; a null hx
  // or cx is zeros), on `stream`.
  int run(const float* x, const float* hx, const float* cx, float* y, float* hy, float* cy,
          void* workspace, cudaStream_t stream, std::string& error) const {
    if (count_ == 0) {
      error = "CudnnRnn::run before a successful init";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    if (!shape_.batch_first)
      return execute(chosen_, x, hx, cx, y, hy, cy, workspace, stream, error);
    // [B, T, ...] → [T, B, ...] before, back after: the transposes sit past cuDNN's workspace.
    char* after =
        static_cast<char*>(workspace) + Arena::align(candidates_[chosen_].workspace_bytes);
    float* x_seq = reinterpret_cast<float*>(after);
    float* y_seq = reinterpret_cast<float*>(after + Arena::align(x_elements() * 4));
    const int64_t y_features = rnn_directions(shape_) * shape_.hidden_size;
    STITCH_CHECK(
        detail::swap_outer_dims(x, x_seq, shape_.batch, shape_.seq_len, shape_.input_size, stream));
    STITCH_CHECK(execute(chosen_, x_seq, hx, cx, y_seq, hy, cy, workspace, stream, error));
    return detail::swap_outer_dims(y_seq, y, shape_.seq_len, shape_.batch, y_features, stream);
  }

  // What run() needs: the chosen algorithm's cuDNN workspace (and, batch_first, the transposed x
  // and y); max_workspace_bytes() covers every algorithm, for tune.
  size_t workspace_bytes() const {
    return count_ > 0 ? with_transposes(candidates_[chosen_].workspace_bytes) : 0;
  }
  size_t max_workspace_bytes() const {
    size_t most = 0;
    for (int c = 0; c < count_; ++c)
      most = candidates_[c].workspace_bytes > most ? candidates_[c].workspace_bytes : most;
    return count_ > 0 ? with_transposes(most) : 0;
  }
  int candidates() const { return count_; }
  float tuned_ms() const { return tuned_ms_; }
  // cuDNN's name of the chosen algorithm (for logs and tests).
  const char* algorithm_name() const { return count_ == 0 ? "none" : candidate_name(chosen_); }
  // Each algorithm init kept, with its time per run in tune (-1: not tuned, or it failed to run).
  const char* candidate_name(int candidate) const {
    switch (candidates_[candidate].algorithm) {
      case CUDNN_RNN_ALGO_STANDARD:
        return "standard";
      case CUDNN_RNN_ALGO_PERSIST_STATIC:
        return "persist_static";
      case CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H:
        return "persist_static_small_h";
      default:
        return "other";
    }
  }
  float candidate_ms(int candidate) const { return candidates_[candidate].tuned_ms; }

 private:
  struct Candidate {
    cudnnRNNAlgo_t algorithm = CUDNN_RNN_ALGO_STANDARD;
    cudnnRNNDescriptor_t rnn = nullptr;
    size_t weight_bytes = 0, workspace_bytes = 0;
    float tuned_ms = -1;
  };

  struct Buffers {
    float *x, *y, *h, *c, *hy, *cy;
  };

  // Milliseconds per replay of one forward of `candidate` captured in a graph on `stream` (an
  // eager run first, so cuDNN loads its kernels outside the capture), or -1 with `error` set.
  float time_graphed(int candidate, const Buffers& b, void* workspace, cudaStream_t stream,
                     int iterations, std::string& error) const {
    if (execute(candidate, b.x, b.h, b.c, b.y, b.hy, b.cy, workspace, stream, error) != STITCH_OK)
      return -1;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;
    float ms = -1;
    if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
      const int captured =
          execute(candidate, b.x, b.h, b.c, b.y, b.hy, b.cy, workspace, stream, error);
      const bool ended = cudaStreamEndCapture(stream, &graph) == cudaSuccess;
      if (captured == STITCH_OK && ended && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess &&
          cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&stop) == cudaSuccess &&
          cudaGraphLaunch(exec, stream) == cudaSuccess) {
        cudaEventRecord(start, stream);
        for (int i = 0; i < iterations; ++i)
          cudaGraphLaunch(exec, stream);
        cudaEventRecord(stop, stream);
        if (cudaEventSynchronize(stop) == cudaSuccess &&
            cudaEventElapsedTime(&ms, start, stop) == cudaSuccess)
          ms /= static_cast<float>(iterations);
        else
          ms = -1;
      }
      if (ms < 0 && error.empty())
        error = std::string(candidate_name(candidate)) + ": not capturable in a CUDA graph";
    }
    if (start != nullptr) cudaEventDestroy(start);
    if (stop != nullptr) cudaEventDestroy(stop);
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();  // a refused capture leaves a (non-sticky) error behind
    return ms;
  }

  int64_t x_elements() const { return shape_.seq_len * shape_.batch * shape_.input_size; }
  int64_t y_elements() const {
    return shape_.seq_len * shape_.batch * rnn_directions(shape_) * shape_.hidden_size;
  }
  size_t with_transposes(size_t cudnn_bytes) const {
    if (!shape_.batch_first) return cudnn_bytes;
    return Arena::align(cudnn_bytes) + Arena::align(x_elements() * 4) +
           Arena::align(y_elements() * 4);
  }

  int make_data_descriptors(std::string& error) {
    const int dirs = rnn_directions(shape_);
    const cudnnRNNDataLayout_t layout = CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED;
    std::vector<int> lengths(shape_.batch, static_cast<int>(shape_.seq_len));
    float padding = 0.0f;
    STITCH_CHECK_CUDNN(cudnnCreateRNNDataDescriptor(&x_));
    STITCH_CHECK_CUDNN(cudnnCreateRNNDataDescriptor(&y_));
    STITCH_CHECK_CUDNN(
        cudnnSetRNNDataDescriptor(x_, CUDNN_DATA_FLOAT, layout, static_cast<int>(shape_.seq_len),
                                  static_cast<int>(shape_.batch),
                                  static_cast<int>(shape_.input_size), lengths.data(), &padding));
    STITCH_CHECK_CUDNN(cudnnSetRNNDataDescriptor(
        y_, CUDNN_DATA_FLOAT, layout, static_cast<int>(shape_.seq_len),
        static_cast<int>(shape_.batch), static_cast<int>(dirs * shape_.hidden_size), lengths.data(),
        &padding));
    const int dims[3] = {shape_.layers * dirs, static_cast<int>(shape_.batch),
                         static_cast<int>(shape_.hidden_size)};
    const int strides[3] = {dims[1] * dims[2], dims[2], 1};
    STITCH_CHECK_CUDNN(cudnnCreateTensorDescriptor(&h_));
    STITCH_CHECK_CUDNN(cudnnSetTensorNdDescriptor(h_, CUDNN_DATA_FLOAT, 3, dims, strides));
    return STITCH_OK;
  }

  // Describes the network for `algorithm`; a refusal by cuDNN leaves the candidate out.
  int add_candidate(cudnnRNNAlgo_t algorithm, RnnMath math, std::string& error) {
    Candidate candidate;
    candidate.algorithm = algorithm;
    STITCH_CHECK_CUDNN(cudnnCreateRNNDescriptor(&candidate.rnn));
    int status = set_descriptor(candidate, math, error);
    if (status == STITCH_OK) {
      candidates_[count_++] = candidate;
    } else {
      cudnnDestroyRNNDescriptor(candidate.rnn);
    }
    return status;
  }

  int set_descriptor(Candidate& candidate, RnnMath math, std::string& error) {
    const int hidden = static_cast<int>(shape_.hidden_size);
    STITCH_CHECK_CUDNN(cudnnSetRNNDescriptor_v8(
        candidate.rnn, candidate.algorithm, detail::cudnn_cell(shape_.cell),
        shape_.has_biases ? CUDNN_RNN_DOUBLE_BIAS : CUDNN_RNN_NO_BIAS,
        shape_.bidirectional ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT,
        CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT,
        math == RnnMath::tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH,
        static_cast<int>(shape_.input_size), hidden, hidden, shape_.layers, dropout_,
        CUDNN_RNN_PADDED_IO_DISABLED));
    STITCH_CHECK_CUDNN(cudnnGetRNNWeightSpaceSize(handle_, candidate.rnn, &candidate.weight_bytes));
    size_t reserve = 0;
    STITCH_CHECK_CUDNN(cudnnGetRNNTempSpaceSizes(handle_, candidate.rnn, CUDNN_FWD_MODE_INFERENCE,
                                                 x_, &candidate.workspace_bytes, &reserve));
    return STITCH_OK;
  }

  // Copies one gate's matrix (and bias) into the weight space, checking that cuDNN's matrix holds
  // exactly the elements PyTorch's chunk has.
  int copy_matrix(int pseudo_layer, int id, cudnnTensorDescriptor_t matrix,
                  cudnnTensorDescriptor_t bias, const float* w, int64_t w_elements, const float* b,
                  cudaStream_t stream, std::string& error) {
    const Candidate& chosen = candidates_[chosen_];
    void* w_at = nullptr;
    void* b_at = nullptr;
    // Both addresses always: cuDNN writes the bias address (null without biases) either way.
    STITCH_CHECK_CUDNN(cudnnGetRNNWeightParams(handle_, chosen.rnn, pseudo_layer,
                                               chosen.weight_bytes, weights_, id, matrix, &w_at,
                                               bias, &b_at));
    if (descriptor_elements(matrix) != w_elements) {
      error = "CudnnRnn::load_weights: cuDNN's matrix " + std::to_string(id) + " of layer " +
              std::to_string(pseudo_layer) + " holds " +
              std::to_string(descriptor_elements(matrix)) + " elements, PyTorch's " +
              std::to_string(w_elements);
      return STITCH_ERROR_INTERNAL;
    }
    STITCH_CHECK_CUDA(cudaMemcpyAsync(w_at, w, w_elements * 4, cudaMemcpyDeviceToDevice, stream));
    if (b != nullptr) {
      if (b_at == nullptr || descriptor_elements(bias) != shape_.hidden_size) {
        error = "CudnnRnn::load_weights: cuDNN has no bias of " +
                std::to_string(shape_.hidden_size) + " elements for matrix " + std::to_string(id);
        return STITCH_ERROR_INTERNAL;
      }
      STITCH_CHECK_CUDA(
          cudaMemcpyAsync(b_at, b, shape_.hidden_size * 4, cudaMemcpyDeviceToDevice, stream));
    }
    return STITCH_OK;
  }

  static int64_t descriptor_elements(cudnnTensorDescriptor_t descriptor) {
    cudnnDataType_t type;
    int rank = 0, dims[8] = {}, strides[8] = {};
    if (cudnnGetTensorNdDescriptor(descriptor, 8, &type, &rank, dims, strides) !=
        CUDNN_STATUS_SUCCESS)
      return -1;
    int64_t elements = 1;
    for (int i = 0; i < rank; ++i)
      elements *= dims[i];
    return elements;
  }

  int execute(int candidate, const float* x, const float* hx, const float* cx, float* y, float* hy,
              float* cy, void* workspace, cudaStream_t stream, std::string& error) const {
    const Candidate& c = candidates_[candidate];
    const bool lstm = shape_.cell == RnnCell::lstm;
    STITCH_CHECK_CUDNN(cudnnSetStream(handle_, stream));
    STITCH_CHECK_CUDNN(cudnnRNNForward(handle_, c.rnn, CUDNN_FWD_MODE_INFERENCE, device_lengths_,
                                       x_, x, y_, y, h_, hx, hy, h_, lstm ? cx : nullptr,
                                       lstm ? cy : nullptr, c.weight_bytes, weights_,
                                       c.workspace_bytes, workspace, 0, nullptr));
    return STITCH_OK;
  }

  void release() {
    for (int c = 0; c < count_; ++c)
      cudnnDestroyRNNDescriptor(candidates_[c].rnn);
    count_ = 0;
    chosen_ = 0;
    if (x_ != nullptr) cudnnDestroyRNNDataDescriptor(x_);
    if (y_ != nullptr) cudnnDestroyRNNDataDescriptor(y_);
    if (h_ != nullptr) cudnnDestroyTensorDescriptor(h_);
    if (dropout_ != nullptr) cudnnDestroyDropoutDescriptor(dropout_);
    if (weights_ != nullptr) cudaFree(weights_);
    if (device_lengths_ != nullptr) cudaFree(device_lengths_);
    x_ = y_ = nullptr;
    h_ = nullptr;
    dropout_ = nullptr;
    weights_ = nullptr;
    device_lengths_ = nullptr;
  }

  cudnnHandle_t handle_ = nullptr;
  RnnShape shape_;
  cudnnDropoutDescriptor_t dropout_ = nullptr;
  cudnnRNNDataDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnTensorDescriptor_t h_ = nullptr;
  Candidate candidates_[kMaxCandidates];
  int count_ = 0;
  int chosen_ = 0;
  float tuned_ms_ = -1;
  void* weights_ = nullptr;
  int32_t* device_lengths_ = nullptr;
};

// Device memory a program's RNNs share (their calls never overlap on its stream): grown at init
// to the largest max_workspace_bytes() before each tune; run reads data() after init is done.
class RnnWorkspace {
 public:
  RnnWorkspace() = default;
  RnnWorkspace(const RnnWorkspace&) = delete;
  RnnWorkspace& operator=(const RnnWorkspace&) = delete;
  ~RnnWorkspace() {
    if (data_ != nullptr) cudaFree(data_);
  }

  int reserve(size_t bytes, std::string& error) {
    if (bytes <= bytes_) return STITCH_OK;
    if (data_ != nullptr) cudaFree(data_);
    data_ = nullptr;
    bytes_ = 0;
    STITCH_CHECK_CUDA(cudaMalloc(&data_, bytes));
    bytes_ = bytes;
    return STITCH_OK;
  }
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace stitch::kernels
