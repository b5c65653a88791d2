// Audit of a built program (.so): which libraries it links and which symbols it imports and exports
// (HACKS.md rows 1, 3, 8, 12, 13, 14, 20, 21). Macros, token pasting or generated code can hide a
// call from the source checks; they cannot hide an import from this audit.
//
// The audit assumes the program was built with `nvcc -cudart shared`: a statically linked cudart
// imports dlopen, fopen, pthread_create and the like itself, which would hide the program's own.
// Such a library is reported as an Error, not audited.
//
// Fatal: links anything but the CUDA runtime/driver, NVIDIA math libraries (cuBLAS/cuBLASLt, cuDNN,
// cuRAND, cuFFT, cuSPARSE, cuSOLVER) and the C/C++ runtime (libtorch / libc10 / libpython →
// calls_torch; anything else, libnvrtc included → hidden_work); imports of thread creation
// (host_thread), process creation, dlopen/dlsym, CUDA IPC, peer access, runtime compilation or
// module loading (hidden_work), file, environment and socket access (reads_answer),
// exit/setenv/signal handlers/device reset (tampers_judge), persisting-L2 reset (l2_persistence),
// ATen/c10/Python symbols (calls_torch); exports that shadow a timing, synchronisation or libc
// function the runner relies on (tampers_judge); file writes, other processes' memory, namespaces,
// mprotect (tampers_judge) and timers (host_thread); any function in the load and unload tables
// (DT_INIT*, DT_PREINIT_ARRAY, DT_FINI*, IRELATIVE) that the toolchain does not put there
// (init_side_effect). A note when the library exports part of the program ABI but not all of it. Non-fatal notes (the source checks or the runner
// decide): stream creation, math-mode setters, half-precision cuBLAS entry points, stream
// attributes and limits, host callbacks in a stream.
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

#include "util/result.h"
#include "verify/checks/elf_reader.h"
#include "verify/verdict.h"

namespace stitch {

// Findings for the library at `so`; an Error when it cannot be read, is not a dynamically linked
// ELF library, or links cudart statically.
Result<std::vector<HackFinding>> audit_library(const std::filesystem::path& so);

// The classification alone, for what read_elf_dynamic returned.
std::vector<HackFinding> classify_library(const ElfDynamicInfo& info);

// Whether defining a function of this name in a program would shadow one the runner relies on for
// timing, synchronisation or error checks (cudaEventElapsedTime, cudaDeviceSynchronize,
// clock_gettime, dlsym, ...). Shared with the source checks.
bool shadows_runtime_function(std::string_view name);

}  // namespace stitch
