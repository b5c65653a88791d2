// The fixed host program every generated program shares: its state (persistent block, workspace
// arena, cuBLASLt handle, CUDA-graph cache), stitch_init's steps (argument checks, param upload,
// arena set-up, GEMM and convolution set-up, at-init subtasks), stitch_forward's steps (argument
// checks, then one CUDA graph per set of input/output pointers) and the C ABI exports of
// include/stitch/program.h.
//
// A program specialises it with one traits struct and one macro (the emitter writes exactly this):
//
//   struct Program {
//     static constexpr std::array<TensorSpec, 2> kParams = {{...}};   // graph.json order
//     static constexpr std::array<TensorSpec, 1> kInputs = {{...}};
//     static constexpr std::array<TensorSpec, 1> kOutputs = {{...}};
//     static constexpr std::array<ParamSlot, 2> kParamSlots = {{...}};  // one per param
//     static constexpr std::array<ReduceExtent, 0> kReductions = {};   // sizes the reduce scratch
//     static constexpr ProgramLayout kLayout = {...};
//     static constexpr bool kUsesMatmul = true;   // false: no cuBLASLt call is instantiated
//     struct Gemms { LtMatmul mm0; };               // per-GEMM state, destroyed first
//     struct Convs { CudnnHandle cudnn; CudnnConv conv0; };  // only with convolutions or RNNs
//     using State = ProgramState<Program>;
//     static int init_gemms(State* s, cudaStream_t stream);         // only when kUsesMatmul
//     static int init_convs(State* s, cudaStream_t stream);         // only with Convs
//     static int run_init_subtasks(State* s, cudaStream_t stream);
//     static int run_subtasks(State* s, const stitch_tensor* inputs, stitch_tensor* outputs,
//                             cudaStream_t stream);
//   };
//   STITCH_PROGRAM_EXPORTS(Program)
//
// Every function returns a STITCH_* code with the state's error text set (runtime.cuh's macros).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "program_support.cuh"
#include "reduction.cuh"
#include "runtime.cuh"
#include "stitch/program.h"

namespace stitch::kernels {

// Where one param lives in the persistent block: it is copied there once, at init.
struct ParamSlot {
  int64_t offset;
  int64_t bytes;
};

// One reduction's [outer, reduce, inner]: the largest reduce_workspace_bytes over all of them
// sizes the one reduction scratch every reduction shares (they run one after another).
struct ReduceExtent {
  int64_t outer;
  int64_t reduce;
  int64_t inner;
};

// The device memory a plan fixes. Arena: [0, arena_bytes) the plan's intermediates (cuBLASLt's
// workspace at lt_workspace_offset among them), then the reduction scratch.
struct ProgramLayout {
  int64_t persistent_bytes;     // one cudaMalloc: at-init results, then the params (ParamSlot)
  int64_t arena_bytes;          // 256-byte aligned
  int64_t lt_workspace_bytes;   // GEMM programs only
  int64_t lt_workspace_offset;  // inside [0, arena_bytes)
  bool cuda_graph;              // forward replays captured graphs (GraphCache) when true
};

namespace detail {

// A program with convolutions or RNNs declares `struct Convs` (its cuDNN handle and CudnnConv /
// CudnnRnn members, kernels/conv.cuh, kernels/rnn.cuh) and `static int init_convs(State*,
// cudaStream_t)`; other programs declare neither and never include cuDNN.
struct NoConvs {};
template <class Program, class = void>
struct ConvsOf {
  using type = NoConvs;
};
template <class Program>
struct ConvsOf<Program, std::void_t<typename Program::Convs>> {
  using type = typename Program::Convs;
};
template <class Program, class = void>
struct HasInitConvs : std::false_type {};
template <class Program>
struct HasInitConvs<Program, std::void_t<decltype(&Program::init_convs)>> : std::true_type {};

}  // namespace detail

// A program's state. Member order is destruction order (reversed): the convolutions' and GEMMs'
// descriptors go first, after the device has finished and the persistent block is freed.
template <class Program>
struct ProgramState {
  std::string error;
  char* persistent = nullptr;  // params (copied at init) + at-init results
  Arena arena;
  char* arena_base = nullptr;
  void* reduce_scratch = nullptr;  // inside the arena
  cublasLtHandle_t lt = nullptr;
  void* lt_workspace = nullptr;  // inside the arena
  size_t lt_workspace_bytes = 0;
  GraphCache graphs;
  typename Program::Gemms gemms;
  typename detail::ConvsOf<Program>::type convs;

  ProgramState() = default;
  ProgramState(const ProgramState&) = delete;
  ProgramState& operator=(const ProgramState&) = delete;
  ~ProgramState() {
    cudaDeviceSynchronize();
    if constexpr (Program::kUsesMatmul) {
      if (lt) cublasLtDestroy(lt);
    }
    if (persistent) cudaFree(persistent);
  }
};

// The text of the last failed init (stitch_last_error(nullptr)); one per program.
template <class Program>
struct ProgramInitError {
  static inline std::string text;
};

namespace detail {

template <class Program>
int check_params(ProgramState<Program>& s, const stitch_tensor* params, int n_params) {
  std::string& error = s.error;
  constexpr int count = static_cast<int>(Program::kParams.size());
  if (n_params != count) {
    error = "expected " + std::to_string(count) + " params, got " + std::to_string(n_params);
    return STITCH_ERROR_INVALID_ARGUMENT;
  }
  for (int p = 0; p < count; ++p)
    STITCH_CHECK(check_tensor(params[p], Program::kParams[p], "param", p, error));
  return STITCH_OK;
}

// The persistent block, with every param copied into its slot.
template <class Program>
int upload_params(ProgramState<Program>& s, const stitch_tensor* params, cudaStream_t stream) {
  std::string& error = s.error;
  static_assert(Program::kParamSlots.size() == Program::kParams.size(), "one slot per param");
  STITCH_CHECK_CUDA(cudaMalloc(&s.persistent, Program::kLayout.persistent_bytes));
  for (size_t p = 0; p < Program::kParamSlots.size(); ++p)
    STITCH_CHECK_CUDA(cudaMemcpyAsync(s.persistent + Program::kParamSlots[p].offset,
                                      params[p].data, Program::kParamSlots[p].bytes,
                                      cudaMemcpyDeviceToDevice, stream));
  return STITCH_OK;
}

// One arena: the plan's intermediates, then the reduction scratch (the largest need).
template <class Program>
int reserve_arena(ProgramState<Program>& s) {
  std::string& error = s.error;
  constexpr ProgramLayout layout = Program::kLayout;
  size_t reduce_scratch_bytes = 0;
  for (const ReduceExtent& r : Program::kReductions)
    reduce_scratch_bytes =
        std::max(reduce_scratch_bytes, reduce_workspace_bytes(r.outer, r.reduce, r.inner));
  STITCH_CHECK(s.arena.reserve(layout.arena_bytes + Arena::align(reduce_scratch_bytes), error));
  s.arena_base = static_cast<char*>(s.arena.at(0));
  s.reduce_scratch = reduce_scratch_bytes ? s.arena.at(layout.arena_bytes) : nullptr;
  return STITCH_OK;
}

// cuBLASLt's handle and workspace, then each GEMM's description and algorithm choice.
template <class Program>
int init_gemms(ProgramState<Program>& s, cudaStream_t stream) {
  std::string& error = s.error;
  constexpr ProgramLayout layout = Program::kLayout;
  s.lt_workspace_bytes = layout.lt_workspace_bytes;
  s.lt_workspace = s.lt_workspace_bytes ? s.arena.at(layout.lt_workspace_offset) : nullptr;
  STITCH_CHECK_CUBLAS(cublasLtCreate(&s.lt));
  return Program::init_gemms(&s, stream);
}

// stitch_init's steps. Init work runs on the default stream and is synchronized before returning:
// nothing it starts outlives stitch_init, and the program creates no stream of its own.
template <class Program>
int init_state(ProgramState<Program>& s, const stitch_tensor* params, int n_params) {
  std::string& error = s.error;
  STITCH_CHECK(check_params(s, params, n_params));
  cudaStream_t stream = nullptr;
  STITCH_CHECK(upload_params(s, params, stream));
  STITCH_CHECK(reserve_arena(s));
  if constexpr (Program::kUsesMatmul) STITCH_CHECK(detail::init_gemms(s, stream));
  if constexpr (HasInitConvs<Program>::value) STITCH_CHECK(Program::init_convs(&s, stream));
  STITCH_CHECK(Program::run_init_subtasks(&s, stream));
  STITCH_CHECK_CUDA(cudaStreamSynchronize(stream));
  s.graphs.set_enabled(Program::kLayout.cuda_graph);
  return STITCH_OK;
}

}  // namespace detail

template <class Program>
int program_init(const stitch_tensor* params, int n_params, void** state) {
  auto* s = new ProgramState<Program>();
  const int status = detail::init_state(*s, params, n_params);
  if (status != STITCH_OK) {
    ProgramInitError<Program>::text = s->error;
    delete s;
    return status;
  }
  *state = s;
  return STITCH_OK;
}

// Checks the tensors against the generated shapes, then replays (or captures) the CUDA graph of
// run_subtasks keyed by the input and output pointers.
template <class Program>
int program_forward(void* state, const stitch_tensor* inputs, int n_inputs,
                    stitch_tensor* outputs, int n_outputs, void* stream_ptr) {
  auto* s = static_cast<ProgramState<Program>*>(state);
  std::string& error = s->error;
  constexpr int in_count = static_cast<int>(Program::kInputs.size());
  constexpr int out_count = static_cast<int>(Program::kOutputs.size());
  if (n_inputs != in_count || n_outputs != out_count) {
    error = "expected " + std::to_string(in_count) + " inputs and " + std::to_string(out_count) +
            " outputs";
    return STITCH_ERROR_INVALID_ARGUMENT;
  }
  for (int i = 0; i < in_count; ++i)
    STITCH_CHECK(check_tensor(inputs[i], Program::kInputs[i], "input", i, error));
  for (int i = 0; i < out_count; ++i)
    STITCH_CHECK(check_tensor(outputs[i], Program::kOutputs[i], "output", i, error));
  cudaStream_t stream = static_cast<cudaStream_t>(stream_ptr);
  std::array<const void*, (in_count + out_count > 0 ? in_count + out_count : 1)> key{};
  for (int i = 0; i < in_count; ++i) key[i] = inputs[i].data;
  for (int i = 0; i < out_count; ++i) key[in_count + i] = outputs[i].data;
  return s->graphs.run(
      key.data(), in_count + out_count, stream,
      [&](cudaStream_t st) { return Program::run_subtasks(s, inputs, outputs, st); }, error);
}

template <class Program>
void program_destroy(void* state) {
  delete static_cast<ProgramState<Program>*>(state);
}

template <class Program>
const char* program_last_error(void* state) {
  return state ? static_cast<ProgramState<Program>*>(state)->error.c_str()
               : ProgramInitError<Program>::text.c_str();
}

}  // namespace stitch::kernels

// The C ABI of include/stitch/program.h for `Program` (one per program: a shared library exports
// these five symbols once).
#define STITCH_PROGRAM_EXPORTS(Program)                                                        \
  extern "C" int stitch_abi_version(void) { return STITCH_ABI_VERSION; }                       \
  extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {         \
    return ::stitch::kernels::program_init<Program>(params, n_params, state);                  \
  }                                                                                            \
  extern "C" int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs,         \
                                stitch_tensor* outputs, int n_outputs, void* stream) {         \
    return ::stitch::kernels::program_forward<Program>(state, inputs, n_inputs, outputs,       \
                                                       n_outputs, stream);                     \
  }                                                                                            \
  extern "C" void stitch_destroy(void* state) {                                                \
    ::stitch::kernels::program_destroy<Program>(state);                                        \
  }                                                                                            \
  extern "C" const char* stitch_last_error(void* state) {                                      \
    return ::stitch::kernels::program_last_error<Program>(state);                              \
  }
