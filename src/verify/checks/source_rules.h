// The identifier rules of the static source checks (verify/checks/static_checks.h), one table:
// which names, in which syntactic form, raise which finding. Internal to src/verify.
#pragma once

#include <cstdint>
#include <string_view>

#include "verify/verdict.h"

namespace stitch::source_rules {

// How an identifier must appear for a rule to match.
enum class Form : uint8_t {
  any,       // anywhere (distinctive names: cudaIpcOpenMemHandle, __float2half, ...)
  call,      // a free-function call: name( , std::name( or ::name(, not obj.name(
  std_name,  // std::name, or bare name under `using namespace std` / `using std::name`
  scope,     // name:: (a namespace qualifier), or after `namespace`
  scoped,    // after :: (precision::tf32, cutlass::half_t)
};

// Which tracks tolerate a precision rule (static_checks.h).
enum class Precision : uint8_t { none, tf32_direct, tf32_library, half, low_bits };

struct IdentifierRule {
  std::string_view name;
  bool prefix;
  Form form;
  HackKind kind;
  bool fatal;
  Precision precision;
  std::string_view why;
};

constexpr bool P = true;   // prefix
constexpr bool E = false;  // exact
using K = HackKind;
using F = Form;
using R = Precision;

constexpr IdentifierRule kRules[] = {
    // Row 1: PyTorch / ATen / c10 / Python.
    {"torch", E, F::scope, K::calls_torch, true, R::none, "uses PyTorch"},
    {"at", E, F::scope, K::calls_torch, true, R::none, "uses ATen"},
    {"c10", E, F::scope, K::calls_torch, true, R::none, "uses c10"},
    {"caffe2", E, F::scope, K::calls_torch, true, R::none, "uses caffe2"},
    {"pybind11", E, F::scope, K::calls_torch, true, R::none, "uses pybind11"},
    {"TORCH_", P, F::any, K::calls_torch, true, R::none, "uses a PyTorch macro"},
    {"AT_DISPATCH", P, F::any, K::calls_torch, true, R::none, "uses an ATen macro"},
    {"AT_CUDA_CHECK", E, F::any, K::calls_torch, true, R::none, "uses an ATen macro"},
    {"C10_", P, F::any, K::calls_torch, true, R::none, "uses a c10 macro"},
    {"PYBIND11_", P, F::any, K::calls_torch, true, R::none, "uses pybind11"},
    {"Py_", P, F::any, K::calls_torch, true, R::none, "uses the Python C API"},
    {"PyObject", P, F::any, K::calls_torch, true, R::none, "uses the Python C API"},
    {"PyImport_", P, F::any, K::calls_torch, true, R::none, "uses the Python C API"},
    {"PyRun_", P, F::any, K::calls_torch, true, R::none, "uses the Python C API"},
    {"PyEval_", P, F::any, K::calls_torch, true, R::none, "uses the Python C API"},
    {"PyGILState_", P, F::any, K::calls_torch, true, R::none, "uses the Python C API"},
    // Row 12: precision. TF32 the program computes itself (3xTF32 may make it accurate).
    {"__float_to_tf32", E, F::any, K::precision_downgrade, true, R::tf32_direct, "rounds to TF32"},
    {"tf32", E, F::scoped, K::precision_downgrade, true, R::tf32_direct,
     "TF32 tensor-core fragments"},
    {"tfloat32_t", E, F::any, K::precision_downgrade, true, R::tf32_direct, "TF32 type"},
    // TF32 a library computes (never split, never FP32-accurate).
    {"CUBLAS_COMPUTE_32F_FAST_TF32", E, F::any, K::precision_downgrade, true, R::tf32_library,
     "TF32 cuBLAS compute"},
    {"CUBLAS_TF32_TENSOR_OP_MATH", E, F::any, K::precision_downgrade, true, R::tf32_library,
     "TF32 cuBLAS math mode"},
    {"CUDNN_TENSOR_OP_MATH", E, F::any, K::precision_downgrade, true, R::tf32_library,
     "lets cuDNN use TF32 on FP32 data"},
    {"fast_tf32", E, F::scoped, K::precision_downgrade, true, R::tf32_library,
     "TF32 GEMM (kernels/matmul.cuh LtMatmul::Compute)"},
    // FP16 / BF16.
    {"CUBLAS_COMPUTE_32F_FAST_16F", E, F::any, K::precision_downgrade, true, R::half,
     "FP16 cuBLAS compute"},
    {"fast_bf16", E, F::scoped, K::precision_downgrade, true, R::half,
     "BF16 GEMM (kernels/matmul.cuh LtMatmul::Compute)"},
    {"CUBLAS_COMPUTE_32F_FAST_16BF", E, F::any, K::precision_downgrade, true, R::half,
     "BF16 cuBLAS compute"},
    {"CUBLAS_COMPUTE_16F", P, F::any, K::precision_downgrade, true, R::half, "FP16 cuBLAS compute"},
    {"CUBLAS_TENSOR_OP_MATH", E, F::any, K::precision_downgrade, true, R::half,
     "deprecated math mode that converts FP32 GEMMs to FP16"},
    {"CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION", E, F::any, K::precision_downgrade, true, R::half,
     "lets cuDNN convert FP32 data to FP16"},
    {"CUDNN_DATA_HALF", E, F::any, K::precision_downgrade, true, R::half, "FP16 cuDNN data"},
    {"CUDNN_DATA_BFLOAT16", E, F::any, K::precision_downgrade, true, R::half, "BF16 cuDNN data"},
    {"CUDA_R_16F", E, F::any, K::precision_downgrade, true, R::half, "FP16 data type"},
    {"CUDA_R_16BF", E, F::any, K::precision_downgrade, true, R::half, "BF16 data type"},
    {"CUDA_C_16F", E, F::any, K::precision_downgrade, true, R::half, "FP16 data type"},
    {"CUDA_C_16BF", E, F::any, K::precision_downgrade, true, R::half, "BF16 data type"},
    {"__half", E, F::any, K::precision_downgrade, true, R::half, "FP16 type"},
    {"__half2", E, F::any, K::precision_downgrade, true, R::half, "FP16 type"},
    {"half2", E, F::any, K::precision_downgrade, true, R::half, "FP16 type"},
    {"__half_raw", E, F::any, K::precision_downgrade, true, R::half, "FP16 type"},
    {"__nv_bfloat16", P, F::any, K::precision_downgrade, true, R::half, "BF16 type"},
    {"nv_bfloat16", P, F::any, K::precision_downgrade, true, R::half, "BF16 type"},
    {"__fp16", E, F::any, K::precision_downgrade, true, R::half, "FP16 type"},
    {"_Float16", E, F::any, K::precision_downgrade, true, R::half, "FP16 type"},
    {"__bf16", E, F::any, K::precision_downgrade, true, R::half, "BF16 type"},
    {"bfloat16_t", E, F::any, K::precision_downgrade, true, R::half, "BF16 type"},
    {"float16_t", E, F::any, K::precision_downgrade, true, R::half, "FP16 type"},
    {"half_t", E, F::scoped, K::precision_downgrade, true, R::half, "FP16 type"},
    {"__float2half", P, F::any, K::precision_downgrade, true, R::half, "converts to FP16"},
    {"__float2bfloat16", P, F::any, K::precision_downgrade, true, R::half, "converts to BF16"},
    {"__floats2half2", P, F::any, K::precision_downgrade, true, R::half, "converts to FP16"},
    {"__floats2bfloat162", P, F::any, K::precision_downgrade, true, R::half, "converts to BF16"},
    {"__float22half2", P, F::any, K::precision_downgrade, true, R::half, "converts to FP16"},
    {"__float22bfloat162", P, F::any, K::precision_downgrade, true, R::half, "converts to BF16"},
    {"__half2float", P, F::any, K::precision_downgrade, true, R::half, "FP16 data"},
    {"__half22float2", P, F::any, K::precision_downgrade, true, R::half, "FP16 data"},
    {"__bfloat162float", P, F::any, K::precision_downgrade, true, R::half, "BF16 data"},
    {"__bfloat1622float2", P, F::any, K::precision_downgrade, true, R::half, "BF16 data"},
    {"__hadd", P, F::any, K::precision_downgrade, true, R::half, "FP16 arithmetic"},
    {"__hsub", P, F::any, K::precision_downgrade, true, R::half, "FP16 arithmetic"},
    {"__hmul", P, F::any, K::precision_downgrade, true, R::half, "FP16 arithmetic"},
    {"__hdiv", P, F::any, K::precision_downgrade, true, R::half, "FP16 arithmetic"},
    {"__hfma", P, F::any, K::precision_downgrade, true, R::half, "FP16 arithmetic"},
    {"cublasHgemm", P, F::any, K::precision_downgrade, true, R::half, "FP16 GEMM"},
    {"OpMultiplyAddFastF16", E, F::any, K::precision_downgrade, true, R::half, "FP16-split GEMM"},
    {"OpMultiplyAddFastBF16", E, F::any, K::precision_downgrade, true, R::half, "BF16-split GEMM"},
    // FP8 / FP6 / FP4 / INT8.
    {"__nv_fp8", P, F::any, K::precision_downgrade, true, R::low_bits, "FP8 type"},
    {"__nv_fp6", P, F::any, K::precision_downgrade, true, R::low_bits, "FP6 type"},
    {"__nv_fp4", P, F::any, K::precision_downgrade, true, R::low_bits, "FP4 type"},
    {"CUDA_R_8F_", P, F::any, K::precision_downgrade, true, R::low_bits, "FP8 data type"},
    {"CUDA_R_6F_", P, F::any, K::precision_downgrade, true, R::low_bits, "FP6 data type"},
    {"CUDA_R_4F_", P, F::any, K::precision_downgrade, true, R::low_bits, "FP4 data type"},
    {"CUDA_R_8I", E, F::any, K::precision_downgrade, true, R::low_bits, "INT8 data type"},
    {"CUBLAS_COMPUTE_32I", P, F::any, K::precision_downgrade, true, R::low_bits, "integer GEMM"},
    {"CUDNN_DATA_INT8", P, F::any, K::precision_downgrade, true, R::low_bits, "INT8 cuDNN data"},
    {"CUDNN_DATA_FP8", P, F::any, K::precision_downgrade, true, R::low_bits, "FP8 cuDNN data"},
    {"__dp4a", E, F::any, K::precision_downgrade, true, R::low_bits, "INT8 dot product"},
    {"__dp2a", P, F::any, K::precision_downgrade, true, R::low_bits, "INT8 dot product"},
    // Row 3: host threads.
    {"thread", E, F::std_name, K::host_thread, true, R::none, "starts a host thread"},
    {"jthread", E, F::std_name, K::host_thread, true, R::none, "starts a host thread"},
    {"async", E, F::std_name, K::host_thread, true, R::none, "may start a host thread"},
    {"pthread_create", E, F::any, K::host_thread, true, R::none, "starts a host thread"},
    {"thrd_create", E, F::any, K::host_thread, true, R::none, "starts a host thread"},
    {"par", E, F::scoped, K::host_thread, true, R::none, "parallel algorithm (host threads)"},
    {"par_unseq", E, F::scoped, K::host_thread, true, R::none, "parallel algorithm (host threads)"},
    // Row 21: processes, run-time code, other GPUs, IPC.
    {"fork", E, F::call, K::hidden_work, true, R::none, "creates a process"},
    {"vfork", E, F::call, K::hidden_work, true, R::none, "creates a process"},
    {"clone", E, F::call, K::hidden_work, true, R::none, "creates a process"},
    {"daemon", E, F::call, K::hidden_work, true, R::none, "starts a daemon"},
    {"execv", P, F::call, K::hidden_work, true, R::none, "executes a program"},
    {"execl", P, F::call, K::hidden_work, true, R::none, "executes a program"},
    {"fexecve", E, F::call, K::hidden_work, true, R::none, "executes a program"},
    {"system", E, F::call, K::hidden_work, true, R::none, "runs a shell command"},
    {"popen", E, F::call, K::hidden_work, true, R::none, "runs a shell command"},
    {"posix_spawn", P, F::call, K::hidden_work, true, R::none, "spawns a process"},
    {"syscall", E, F::call, K::hidden_work, true, R::none, "makes raw system calls"},
    {"dlopen", E, F::call, K::hidden_work, true, R::none, "loads a library at run time"},
    {"dlmopen", E, F::call, K::hidden_work, true, R::none, "loads a library at run time"},
    {"dlsym", E, F::call, K::hidden_work, true, R::none, "looks up symbols at run time"},
    {"cudaIpc", P, F::any, K::hidden_work, true, R::none,
     "uses CUDA IPC (another process's memory)"},
    {"cuIpc", P, F::any, K::hidden_work, true, R::none, "uses CUDA IPC (another process's memory)"},
    {"cuMemExportToShareableHandle", E, F::any, K::hidden_work, true, R::none,
     "shares memory with a process"},
    {"cuMemImportFromShareableHandle", E, F::any, K::hidden_work, true, R::none,
     "maps another process's memory"},
    {"cudaMemcpyPeer", P, F::any, K::hidden_work, true, R::none, "copies to another GPU"},
    {"cudaDeviceEnablePeerAccess", E, F::any, K::hidden_work, true, R::none,
     "accesses another GPU"},
    {"cuCtxEnablePeerAccess", E, F::any, K::hidden_work, true, R::none, "accesses another GPU"},
    {"nvrtc", P, F::any, K::hidden_work, true, R::none,
     "compiles code at run time, out of the checks' sight"},
    {"nvJitLink", P, F::any, K::hidden_work, true, R::none, "links code at run time"},
    {"cuModuleLoad", P, F::any, K::hidden_work, true, R::none, "loads GPU code at run time"},
    {"cuLibraryLoad", P, F::any, K::hidden_work, true, R::none, "loads GPU code at run time"},
    {"cudaLibraryLoad", P, F::any, K::hidden_work, true, R::none, "loads GPU code at run time"},
    {"cudaLaunchHostFunc", E, F::any, K::hidden_work, false, R::none, "runs host code in a stream"},
    {"cudaStreamAddCallback", E, F::any, K::hidden_work, false, R::none,
     "runs host code in a stream"},
    {"cuLaunchHostFunc", E, F::any, K::hidden_work, false, R::none, "runs host code in a stream"},
    // Row 22: what a persistent kernel polls.
    {"cudaHostAllocMapped", E, F::any, K::persistent_kernel, false, R::none,
     "maps host memory into the GPU"},
    {"cudaHostRegisterMapped", E, F::any, K::persistent_kernel, false, R::none,
     "maps host memory into the GPU"},
    {"cudaHostGetDevicePointer", E, F::any, K::persistent_kernel, false, R::none,
     "maps host memory into the GPU"},
    // Row 8: files, environment, network.
    {"fopen", P, F::call, K::reads_answer, true, R::none, "opens files"},
    {"freopen", P, F::call, K::reads_answer, true, R::none, "opens files"},
    {"open", E, F::call, K::reads_answer, true, R::none, "opens files"},
    {"open64", E, F::call, K::reads_answer, true, R::none, "opens files"},
    {"openat", P, F::call, K::reads_answer, true, R::none, "opens files"},
    {"creat", E, F::call, K::reads_answer, true, R::none, "creates files"},
    {"opendir", E, F::call, K::reads_answer, true, R::none, "lists directories"},
    {"ifstream", E, F::any, K::reads_answer, true, R::none, "opens files"},
    {"ofstream", E, F::any, K::reads_answer, true, R::none, "opens files"},
    {"fstream", E, F::any, K::reads_answer, true, R::none, "opens files"},
    {"basic_ifstream", E, F::any, K::reads_answer, true, R::none, "opens files"},
    {"basic_ofstream", E, F::any, K::reads_answer, true, R::none, "opens files"},
    {"basic_fstream", E, F::any, K::reads_answer, true, R::none, "opens files"},
    {"filebuf", E, F::any, K::reads_answer, true, R::none, "opens files"},
    {"filesystem", E, F::std_name, K::reads_answer, true, R::none, "uses the file system"},
    {"getenv", E, F::call, K::reads_answer, true, R::none, "reads the environment"},
    {"secure_getenv", E, F::call, K::reads_answer, true, R::none, "reads the environment"},
    {"environ", E, F::any, K::reads_answer, true, R::none, "reads the environment"},
    {"__environ", E, F::any, K::reads_answer, true, R::none, "reads the environment"},
    {"socket", E, F::call, K::reads_answer, true, R::none, "opens a socket"},
    {"connect", E, F::call, K::reads_answer, true, R::none, "connects a socket"},
    {"getaddrinfo", E, F::call, K::reads_answer, true, R::none, "resolves host names"},
    {"gethostbyname", P, F::call, K::reads_answer, true, R::none, "resolves host names"},
    // Rows 13 / 19 / 20: the runner and its verdict.
    {"exit", E, F::call, K::tampers_judge, true, R::none, "exits the runner process"},
    {"_exit", E, F::call, K::tampers_judge, true, R::none, "exits the runner process"},
    {"_Exit", E, F::call, K::tampers_judge, true, R::none, "exits the runner process"},
    {"quick_exit", E, F::call, K::tampers_judge, true, R::none, "exits the runner process"},
    {"setenv", E, F::call, K::tampers_judge, true, R::none, "changes the environment"},
    {"putenv", E, F::call, K::tampers_judge, true, R::none, "changes the environment"},
    {"unsetenv", E, F::call, K::tampers_judge, true, R::none, "changes the environment"},
    {"signal", E, F::call, K::tampers_judge, true, R::none, "installs a signal handler"},
    {"sigaction", E, F::call, K::tampers_judge, true, R::none, "installs a signal handler"},
    {"kill", E, F::call, K::tampers_judge, true, R::none, "signals processes"},
    {"ptrace", E, F::call, K::tampers_judge, true, R::none, "traces processes"},
    {"cudaDeviceReset", E, F::any, K::tampers_judge, true, R::none,
     "destroys the runner's CUDA context"},
    {"cuDevicePrimaryCtxReset", P, F::any, K::tampers_judge, true, R::none,
     "destroys the runner's CUDA context"},
    // Row 27.
    {"atexit", E, F::call, K::init_side_effect, true, R::none, "registers code to run at unload"},
    {"at_quick_exit", E, F::call, K::init_side_effect, true, R::none,
     "registers code to run at exit"},
    {"pthread_atfork", E, F::any, K::init_side_effect, true, R::none, "registers fork handlers"},
    // Row 14: persisting L2.
    {"cudaCtxResetPersistingL2Cache", E, F::any, K::l2_persistence, true, R::none,
     "manages persisting L2 lines"},
    {"cuCtxResetPersistingL2Cache", E, F::any, K::l2_persistence, true, R::none,
     "manages persisting L2 lines"},
    {"cudaLimitPersistingL2CacheSize", E, F::any, K::l2_persistence, true, R::none,
     "reserves persisting L2"},
    {"CU_LIMIT_PERSISTING_L2_CACHE_SIZE", E, F::any, K::l2_persistence, true, R::none,
     "reserves persisting L2"},
    {"cudaStreamAttributeAccessPolicyWindow", E, F::any, K::l2_persistence, true, R::none,
     "sets an L2 access-policy window"},
    {"cudaLaunchAttributeAccessPolicyWindow", E, F::any, K::l2_persistence, true, R::none,
     "sets an L2 access-policy window"},
    {"cudaKernelNodeAttributeAccessPolicyWindow", E, F::any, K::l2_persistence, true, R::none,
     "sets an L2 access-policy window"},
    {"CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW", E, F::any, K::l2_persistence, true, R::none,
     "sets an L2 access-policy window"},
    {"CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW", E, F::any, K::l2_persistence, true, R::none,
     "sets an L2 access-policy window"},
    {"CU_KERNEL_NODE_ATTRIBUTE_ACCESS_POLICY_WINDOW", E, F::any, K::l2_persistence, true, R::none,
     "sets an L2 access-policy window"},
    {"accessPolicyWindow", E, F::any, K::l2_persistence, true, R::none,
     "sets an L2 access-policy window"},
    {"cudaAccessPropertyPersisting", E, F::any, K::l2_persistence, true, R::none,
     "marks lines as persisting in L2"},
    {"CU_ACCESS_PROPERTY_PERSISTING", E, F::any, K::l2_persistence, true, R::none,
     "marks lines as persisting in L2"},
    {"persisting", E, F::scoped, K::l2_persistence, true, R::none,
     "marks lines as persisting in L2"},
    // Row 2 (see also the join check below).
    {"cudaStreamPerThread", E, F::any, K::side_stream, false, R::none,
     "uses the per-thread default stream, not the caller's"},
    {"cudaStreamLegacy", E, F::any, K::side_stream, false, R::none,
     "uses the legacy default stream, not the caller's"},
};

// The access-policy window's types, in the runtime's and the driver's spelling.
constexpr std::string_view kPolicyWindowTypes[] = {"cudaAccessPolicyWindow",
                                                   "CUaccessPolicyWindow"};

}  // namespace stitch::source_rules
