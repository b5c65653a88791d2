// Bench of kernels/rnn.cuh (cuDNN's RNN API) at the shapes of KernelBench's level-3 recurrent
// tasks: per shape and math, each algorithm's time in tune, the one kept and the median time of one
// forward replayed from a CUDA graph (how a generated program runs it), L2 flushed before every
// run. Not a test: built on demand (target rnn_bench) and run on a GPU by hand, beside
// tests/kernels/rnn_torch_bench.py (PyTorch's own cuDNN call at the same shapes, graphed).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/rnn.cuh"

namespace {

using namespace stitch::kernels;

constexpr int kIterations = 20, kWarmups = 3;
constexpr size_t kFlushBytes = 256u << 20;

struct BenchShape {
  const char* name;
  RnnShape shape;
};

#define CHECK(status)                                                         \
  do {                                                                        \
    if ((status) != STITCH_OK) {                                              \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, error.c_str()); \
      return false;                                                           \
    }                                                                         \
  } while (0)

bool bench(const BenchShape& b, RnnMath math, char* flush) {
  const RnnShape& s = b.shape;
  std::string error;
  CudnnHandle handle;
  CHECK(handle.create(error));
  CudnnRnn rnn;
  CHECK(rnn.init(handle.get(), s, math, error));
  void* workspace = nullptr;
  cudaMalloc(&workspace, std::max<size_t>(rnn.max_workspace_bytes(), 1));
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  CHECK(rnn.tune(workspace, stream, error));
  std::vector<float*> params(rnn_param_count(s));
  for (int i = 0; i < rnn_param_count(s); ++i) {
    cudaMalloc(&params[i], rnn_param_elements(s, i) * 4);
    cudaMemset(params[i], 0, rnn_param_elements(s, i) * 4);
  }
  std::vector<const float*> pointers(params.begin(), params.end());
  CHECK(rnn.load_weights(pointers.data(), stream, error));
  const int64_t dirs = rnn_directions(s);
  const int64_t states = s.layers * dirs * s.batch * s.hidden_size;
  float *x, *y, *h, *c, *hy, *cy;
  cudaMalloc(&x, s.seq_len * s.batch * s.input_size * 4);
  cudaMalloc(&y, s.seq_len * s.batch * dirs * s.hidden_size * 4);
  for (float** state : {&h, &c, &hy, &cy}) {
    cudaMalloc(state, states * 4);
    cudaMemset(*state, 0, states * 4);
  }
  cudaMemset(x, 0, s.seq_len * s.batch * s.input_size * 4);
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  const int captured = rnn.run(x, h, c, y, hy, cy, workspace, stream, error);
  cudaStreamEndCapture(stream, &graph);
  CHECK(captured);
  if (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
    std::fprintf(stderr, "graph instantiation failed\n");
    return false;
  }
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> times;
  for (int i = 0; i < kWarmups + kIterations; ++i) {
    cudaMemsetAsync(flush, i, kFlushBytes, stream);
    cudaEventRecord(start, stream);
    cudaGraphLaunch(exec, stream);
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    if (i >= kWarmups) times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  const cudaError_t last = cudaDeviceSynchronize();
  std::string tuned;
  for (int c = 0; c < rnn.candidates(); ++c)
    tuned += std::string(c ? " " : "") + rnn.candidate_name(c) + "=" +
             std::to_string(rnn.candidate_ms(c)).substr(0, 6);
  std::printf("%-28s %-5s %-22s %10.3f  %s  [%s]\n", b.name,
              math == RnnMath::tf32 ? "tf32" : "fp32", rnn.algorithm_name(),
              times[times.size() / 2], cudaGetErrorName(last), tuned.c_str());
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  for (float* p : params)
    cudaFree(p);
  for (float* p : {x, y, h, c, hy, cy})
    cudaFree(p);
  cudaFree(workspace);
  cudaStreamDestroy(stream);
  return last == cudaSuccess;
}

}  // namespace

int main() {
  const BenchShape shapes[] = {
      {"35_LSTM_6x512x10x128x256", rnn_shape(RnnCell::lstm, 512, 10, 128, 256, 6, false, true)},
      {"35_LSTM_seq_major", rnn_shape(RnnCell::lstm, 512, 10, 128, 256, 6)},
      {"39_GRU_6x512x10x128x256", rnn_shape(RnnCell::gru, 512, 10, 128, 256, 6)},
      {"gru_bidirectional_6x512x10x128x256", rnn_shape(RnnCell::gru, 512, 10, 128, 256, 6, true)},
      {"lstm_1x128x64x512x512", rnn_shape(RnnCell::lstm, 128, 64, 512, 512, 1)},
      {"rnn_tanh_2x256x8x1024x256", rnn_shape(RnnCell::rnn_tanh, 256, 8, 1024, 256, 2)},
  };
  char* flush = nullptr;
  cudaMalloc(&flush, kFlushBytes);
  std::printf("%-28s %-5s %-22s %10s  %s\n", "shape", "math", "algorithm", "graph ms",
              "status  [tuned ms per algorithm]");
  bool ok = true;
  for (const BenchShape& shape : shapes)
    for (RnnMath math : {RnnMath::strict_fp32, RnnMath::tf32})
      ok = bench(shape, math, flush) && ok;
  cudaFree(flush);
  return ok ? 0 : 1;
}
