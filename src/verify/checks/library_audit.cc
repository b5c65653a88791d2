// Classification of a program's DT_NEEDED libraries, imports and exports (see library_audit.h).
#include "verify/checks/library_audit.h"

#include <algorithm>
#include <initializer_list>

#include <fmt/format.h>

#include "util/fs.h"

namespace stitch {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool in_list(std::string_view word, std::initializer_list<std::string_view> list) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

// "libcudnn_ops.so.9" -> "libcudnn_ops"; "/x/libfoo.so" -> "libfoo".
std::string_view library_stem(std::string_view name) {
  if (const size_t slash = name.rfind('/'); slash != std::string_view::npos)
    name.remove_prefix(slash + 1);
  if (const size_t so = name.find(".so"); so != std::string_view::npos) name = name.substr(0, so);
  return name;
}

bool is_torch_library(std::string_view stem) {
  for (std::string_view p : {"libtorch", "libc10", "libpython", "libcaffe2", "libshm"})
    if (starts_with(stem, p)) return true;
  return false;
}

bool is_allowed_library(std::string_view stem) {
  if (starts_with(stem, "libcudnn") || starts_with(stem, "ld-linux")) return true;
  return in_list(stem, {"libcudart", "libcuda", "libcublas", "libcublasLt", "libcurand", "libcufft",
                        "libcufftw", "libcusparse", "libcusolver", "libc", "libm", "libmvec",
                        "libstdc++", "libgcc_s", "libdl", "librt", "libpthread"});
}

enum class Match { exact, prefix };

struct ImportRule {
  std::string_view name;
  Match match;
  HackKind kind;
  bool fatal;
  std::string_view why;
};

// Order matters only for readability; every matching rule reports.
constexpr ImportRule kImportRules[] = {
    // Row 3: host threads.
    {"pthread_create", Match::exact, HackKind::host_thread, true, "creates a host thread"},
    {"thrd_create", Match::exact, HackKind::host_thread, true, "creates a host thread"},
    {"_ZNSt6thread", Match::prefix, HackKind::host_thread, true,
     "uses std::thread (std::async/jthread too)"},
    {"GOMP_parallel", Match::prefix, HackKind::host_thread, true, "runs an OpenMP parallel region"},
    {"__kmpc_fork_call", Match::exact, HackKind::host_thread, true,
     "runs an OpenMP parallel region"},
    // Row 21: child processes, code loaded at run time, other GPUs, IPC.
    {"fork", Match::exact, HackKind::hidden_work, true, "creates a process"},
    {"vfork", Match::exact, HackKind::hidden_work, true, "creates a process"},
    {"clone", Match::exact, HackKind::hidden_work, true, "creates a process or thread"},
    {"clone3", Match::exact, HackKind::hidden_work, true, "creates a process or thread"},
    {"daemon", Match::exact, HackKind::hidden_work, true, "starts a daemon"},
    {"execv", Match::prefix, HackKind::hidden_work, true, "executes a program"},
    {"execl", Match::prefix, HackKind::hidden_work, true, "executes a program"},
    {"fexecve", Match::exact, HackKind::hidden_work, true, "executes a program"},
    {"system", Match::exact, HackKind::hidden_work, true, "runs a shell command"},
    {"popen", Match::exact, HackKind::hidden_work, true, "runs a shell command"},
    {"posix_spawn", Match::prefix, HackKind::hidden_work, true, "spawns a process"},
    {"syscall", Match::exact, HackKind::hidden_work, true, "makes raw system calls"},
    {"dlopen", Match::exact, HackKind::hidden_work, true,
     "loads a library at run time (programs link theirs)"},
    {"dlmopen", Match::exact, HackKind::hidden_work, true, "loads a library at run time"},
    {"dlsym", Match::exact, HackKind::hidden_work, true, "looks up symbols at run time"},
    {"dlvsym", Match::exact, HackKind::hidden_work, true, "looks up symbols at run time"},
    {"cudaIpc", Match::prefix, HackKind::hidden_work, true,
     "uses CUDA IPC (another process's memory)"},
    {"cuIpc", Match::prefix, HackKind::hidden_work, true,
     "uses CUDA IPC (another process's memory)"},
    {"cuMemExportToShareableHandle", Match::exact, HackKind::hidden_work, true,
     "shares memory with a process"},
    {"cuMemImportFromShareableHandle", Match::exact, HackKind::hidden_work, true,
     "maps another process's memory"},
    {"cudaMemcpyPeer", Match::prefix, HackKind::hidden_work, true, "copies to another GPU"},
    {"cudaDeviceEnablePeerAccess", Match::exact, HackKind::hidden_work, true,
     "accesses another GPU"},
    {"cuCtxEnablePeerAccess", Match::exact, HackKind::hidden_work, true, "accesses another GPU"},
    {"nvrtc", Match::prefix, HackKind::hidden_work, true,
     "compiles code at run time, out of the checks' sight"},
    {"nvJitLink", Match::prefix, HackKind::hidden_work, true, "links code at run time"},
    {"cuModuleLoad", Match::prefix, HackKind::hidden_work, true, "loads GPU code at run time"},
    {"cuLibraryLoad", Match::prefix, HackKind::hidden_work, true, "loads GPU code at run time"},
    {"cudaLibraryLoad", Match::prefix, HackKind::hidden_work, true, "loads GPU code at run time"},
    {"cudaLaunchHostFunc", Match::exact, HackKind::hidden_work, false,
     "runs host code in a stream"},
    {"cudaStreamAddCallback", Match::exact, HackKind::hidden_work, false,
     "runs host code in a stream"},
    {"cuLaunchHostFunc", Match::exact, HackKind::hidden_work, false, "runs host code in a stream"},
    // Row 8: files, environment, network.
    {"fopen", Match::prefix, HackKind::reads_answer, true, "opens files"},
    {"freopen", Match::prefix, HackKind::reads_answer, true, "opens files"},
    {"open", Match::exact, HackKind::reads_answer, true, "opens files"},
    {"open64", Match::exact, HackKind::reads_answer, true, "opens files"},
    {"__open", Match::prefix, HackKind::reads_answer, true, "opens files"},
    {"openat", Match::prefix, HackKind::reads_answer, true, "opens files"},
    {"__openat", Match::prefix, HackKind::reads_answer, true, "opens files"},
    {"creat", Match::prefix, HackKind::reads_answer, true, "creates files"},
    {"opendir", Match::exact, HackKind::reads_answer, true, "lists directories"},
    {"_ZNSt14basic_ifstream", Match::prefix, HackKind::reads_answer, true,
     "opens files (std::ifstream)"},
    {"_ZNSt14basic_ofstream", Match::prefix, HackKind::reads_answer, true,
     "opens files (std::ofstream)"},
    {"_ZNSt13basic_fstream", Match::prefix, HackKind::reads_answer, true,
     "opens files (std::fstream)"},
    {"_ZNSt13basic_filebuf", Match::prefix, HackKind::reads_answer, true,
     "opens files (std::filebuf)"},
    {"_ZNSt10filesystem", Match::prefix, HackKind::reads_answer, true, "uses std::filesystem"},
    {"_ZNKSt10filesystem", Match::prefix, HackKind::reads_answer, true, "uses std::filesystem"},
    {"getenv", Match::exact, HackKind::reads_answer, true, "reads the environment"},
    {"secure_getenv", Match::exact, HackKind::reads_answer, true, "reads the environment"},
    {"__secure_getenv", Match::exact, HackKind::reads_answer, true, "reads the environment"},
    {"environ", Match::exact, HackKind::reads_answer, true, "reads the environment"},
    {"__environ", Match::exact, HackKind::reads_answer, true, "reads the environment"},
    {"socket", Match::exact, HackKind::reads_answer, true, "opens a socket"},
    {"connect", Match::exact, HackKind::reads_answer, true, "connects a socket"},
    {"getaddrinfo", Match::exact, HackKind::reads_answer, true, "resolves host names"},
    {"gethostbyname", Match::prefix, HackKind::reads_answer, true, "resolves host names"},
    // Rows 13 / 19 / 20: tampering with the runner or its verdict.
    {"exit", Match::exact, HackKind::tampers_judge, true, "exits the runner process"},
    {"_exit", Match::exact, HackKind::tampers_judge, true, "exits the runner process"},
    {"_Exit", Match::exact, HackKind::tampers_judge, true, "exits the runner process"},
    {"quick_exit", Match::exact, HackKind::tampers_judge, true, "exits the runner process"},
    {"setenv", Match::exact, HackKind::tampers_judge, true, "changes the environment"},
    {"putenv", Match::exact, HackKind::tampers_judge, true, "changes the environment"},
    {"unsetenv", Match::exact, HackKind::tampers_judge, true, "changes the environment"},
    {"clearenv", Match::exact, HackKind::tampers_judge, true, "changes the environment"},
    {"signal", Match::exact, HackKind::tampers_judge, true, "installs signal handlers"},
    {"sigaction", Match::exact, HackKind::tampers_judge, true, "installs signal handlers"},
    {"__sysv_signal", Match::exact, HackKind::tampers_judge, true, "installs signal handlers"},
    {"kill", Match::exact, HackKind::tampers_judge, true, "signals processes"},
    {"ptrace", Match::exact, HackKind::tampers_judge, true, "traces processes"},
    {"prctl", Match::exact, HackKind::tampers_judge, true, "changes process attributes"},
    {"setrlimit", Match::prefix, HackKind::tampers_judge, true, "changes resource limits"},
    {"cudaDeviceReset", Match::exact, HackKind::tampers_judge, true,
     "destroys the runner's CUDA context"},
    {"cuDevicePrimaryCtxReset", Match::prefix, HackKind::tampers_judge, true,
     "destroys the runner's CUDA context"},
    // Row 29: the file system written, other processes' memory, namespaces, code patching.
    {"rename", Match::prefix, HackKind::tampers_judge, true, "renames files"},
    {"unlink", Match::prefix, HackKind::tampers_judge, true, "deletes files"},
    {"remove", Match::exact, HackKind::tampers_judge, true, "deletes files"},
    {"rmdir", Match::exact, HackKind::tampers_judge, true, "deletes directories"},
    {"truncate", Match::prefix, HackKind::tampers_judge, true, "truncates files"},
    {"ftruncate", Match::prefix, HackKind::tampers_judge, true, "truncates files"},
    {"mkdir", Match::prefix, HackKind::tampers_judge, true, "creates directories"},
    {"symlink", Match::prefix, HackKind::tampers_judge, true, "creates links"},
    {"link", Match::exact, HackKind::tampers_judge, true, "creates links"},
    {"linkat", Match::exact, HackKind::tampers_judge, true, "creates links"},
    {"chmod", Match::exact, HackKind::tampers_judge, true, "changes file permissions"},
    {"fchmod", Match::prefix, HackKind::tampers_judge, true, "changes file permissions"},
    {"chown", Match::exact, HackKind::tampers_judge, true, "changes file owners"},
    {"fchown", Match::prefix, HackKind::tampers_judge, true, "changes file owners"},
    {"lchown", Match::exact, HackKind::tampers_judge, true, "changes file owners"},
    {"mknod", Match::prefix, HackKind::tampers_judge, true, "creates device files"},
    {"__xmknod", Match::prefix, HackKind::tampers_judge, true, "creates device files"},
    {"mkfifo", Match::prefix, HackKind::tampers_judge, true, "creates pipes"},
    {"memfd_create", Match::exact, HackKind::tampers_judge, true, "creates in-memory files"},
    {"write", Match::exact, HackKind::tampers_judge, true,
     "writes to a file descriptor (the runner's pipes are file descriptors)"},
    {"pwrite", Match::prefix, HackKind::tampers_judge, true, "writes to a file descriptor"},
    {"writev", Match::exact, HackKind::tampers_judge, true, "writes to a file descriptor"},
    {"dup2", Match::exact, HackKind::tampers_judge, true, "duplicates file descriptors"},
    {"dup3", Match::exact, HackKind::tampers_judge, true, "duplicates file descriptors"},
    {"sendfile", Match::prefix, HackKind::tampers_judge, true, "copies between file descriptors"},
    {"splice", Match::exact, HackKind::tampers_judge, true, "copies between file descriptors"},
    {"process_vm_", Match::prefix, HackKind::tampers_judge, true,
     "reads or writes another process's memory"},
    {"process_madvise", Match::exact, HackKind::tampers_judge, true,
     "acts on another process's memory"},
    {"pidfd_", Match::prefix, HackKind::tampers_judge, true, "reaches into another process"},
    {"setns", Match::exact, HackKind::tampers_judge, true, "enters another namespace"},
    {"unshare", Match::exact, HackKind::tampers_judge, true, "leaves the runner's namespaces"},
    {"mount", Match::exact, HackKind::tampers_judge, true, "mounts file systems"},
    {"umount", Match::prefix, HackKind::tampers_judge, true, "unmounts file systems"},
    {"pivot_root", Match::exact, HackKind::tampers_judge, true, "changes the root file system"},
    {"chroot", Match::exact, HackKind::tampers_judge, true, "changes the root directory"},
    {"mprotect", Match::exact, HackKind::tampers_judge, true,
     "changes memory protection (patches code)"},
    {"pkey_mprotect", Match::exact, HackKind::tampers_judge, true,
     "changes memory protection (patches code)"},
    // Rows 3 / 21: code run by a timer, outside the call that is timed.
    {"timer_create", Match::exact, HackKind::host_thread, true, "runs code on a timer"},
    {"timer_settime", Match::exact, HackKind::host_thread, true, "runs code on a timer"},
    {"setitimer", Match::exact, HackKind::host_thread, true, "runs code on a timer"},
    {"timerfd_", Match::prefix, HackKind::host_thread, true, "runs code on a timer"},
    {"alarm", Match::exact, HackKind::host_thread, true, "runs code on a timer"},
    {"ualarm", Match::exact, HackKind::host_thread, true, "runs code on a timer"},
    {"atexit", Match::exact, HackKind::init_side_effect, true, "registers code to run at unload"},
    {"at_quick_exit", Match::exact, HackKind::init_side_effect, true,
     "registers code to run at exit"},
    // Row 14.
    {"cudaCtxResetPersistingL2Cache", Match::exact, HackKind::l2_persistence, true,
     "manages persisting L2 lines"},
    {"cuCtxResetPersistingL2Cache", Match::exact, HackKind::l2_persistence, true,
     "manages persisting L2 lines"},
    {"cudaStreamSetAttribute", Match::prefix, HackKind::l2_persistence, false,
     "sets stream attributes (where an access-policy window would be set)"},
    {"cuStreamSetAttribute", Match::prefix, HackKind::l2_persistence, false,
     "sets stream attributes"},
    {"cudaGraphKernelNodeSetAttribute", Match::exact, HackKind::l2_persistence, false,
     "sets kernel-node attributes"},
    {"cudaDeviceSetLimit", Match::exact, HackKind::l2_persistence, false,
     "sets device limits (persisting-L2 size is one)"},
    {"cuCtxSetLimit", Match::exact, HackKind::l2_persistence, false, "sets context limits"},
    // Row 2: streams (the source checks see whether they are joined; the runner syncs the device).
    {"cudaStreamCreate", Match::prefix, HackKind::side_stream, false, "creates streams"},
    {"cuStreamCreate", Match::prefix, HackKind::side_stream, false, "creates streams"},
    // Row 12: the source checks see which mode is set.
    {"cublasSetMathMode", Match::exact, HackKind::precision_downgrade, false,
     "sets a cuBLAS math mode"},
    {"cudnnSetConvolutionMathType", Match::exact, HackKind::precision_downgrade, false,
     "sets a cuDNN math type"},
    {"cublasHgemm", Match::prefix, HackKind::precision_downgrade, false,
     "calls a half-precision cuBLAS GEMM"},
};

bool rule_matches(const ImportRule& rule, std::string_view symbol) {
  return rule.match == Match::exact ? symbol == rule.name : starts_with(symbol, rule.name);
}

// ATen / c10 / torch / caffe2 / Python symbols, in case a library was linked under another name.
bool is_torch_symbol(std::string_view s) {
  for (std::string_view p : {"_ZN2at", "_ZNK2at", "_ZN3c10", "_ZNK3c10", "_ZN5torch", "_ZNK5torch",
                             "_ZN6caffe2", "_ZNK6caffe2", "_Py"})
    if (starts_with(s, p)) return true;
  return s.size() > 2 && starts_with(s, "Py") && ((s[2] >= 'A' && s[2] <= 'Z') || s[2] == '_');
}

void add(std::vector<HackFinding>& out, HackKind kind, bool fatal, std::string detail) {
  out.push_back(HackFinding{kind, std::move(detail), fatal});
}

// What the toolchain itself puts in the load and unload tables of an `nvcc -shared` library
// (measured on nvcc 13 / GCC 12 builds of the project's programs): crti's _init/_fini, crtbegin's
// frame_dummy and __do_global_dtors_aux, one CUDA fatbin registration per translation unit, and
// the compiler's per-unit static initialiser (which also holds <iostream>'s ios_base::Init under
// GCC 12; what the program's own namespace-scope objects add to it is the source checks' to see).
bool toolchain_hook(const ElfLoadHook& hook) {
  const std::string& s = hook.symbol;
  if (hook.table == "DT_INIT") return s == "_init";
  if (hook.table == "DT_FINI") return s == "_fini";
  if (hook.table == "DT_INIT_ARRAY")
    return s == "frame_dummy" || s == "_ZL24__sti____cudaRegisterAllv" ||
           s == "__sti____cudaRegisterAll" || starts_with(s, "_GLOBAL__sub_I_");
  if (hook.table == "DT_FINI_ARRAY")
    return s == "__do_global_dtors_aux" || starts_with(s, "_GLOBAL__sub_D_");
  return false;  // DT_PREINIT_ARRAY, IRELATIVE: never from the toolchain in a program
}

// The program ABI (include/stitch/program.h).
constexpr std::string_view kAbiSymbols[] = {"stitch_abi_version", "stitch_init", "stitch_forward",
                                            "stitch_destroy", "stitch_last_error"};

void classify_load_hooks(const ElfDynamicInfo& info, std::vector<HackFinding>& out) {
  std::string hooks;
  int count = 0;
  for (const ElfLoadHook& hook : info.load_hooks) {
    if (toolchain_hook(hook)) continue;
    if (++count <= 4)
      hooks += fmt::format("{}{} ({})", hooks.empty() ? "" : ", ",
                           hook.symbol.empty() ? fmt::format("{:#x}", hook.address) : hook.symbol,
                           hook.table);
  }
  std::string others;
  for (const std::string& name : info.exported_functions)
    if (std::find(std::begin(kAbiSymbols), std::end(kAbiSymbols), name) == std::end(kAbiSymbols))
      others += (others.empty() ? "" : ", ") + name;
  if (count > 0)
    add(out, HackKind::init_side_effect, true,
        fmt::format("runs {}{} when loaded or unloaded: only the toolchain's own entries and "
                    "CUDA's registration may{}",
                    hooks, count > 4 ? fmt::format(" (and {} more)", count - 4) : "",
                    others.empty() ? "" : "; exports besides the ABI: " + others));
  // A library that exports part of the ABI is a program missing the rest (others, as the synthetic
  // ones of tests, are not programs at all; the runner refuses them as it loads them).
  const bool program = std::any_of(info.exported_symbols.begin(), info.exported_symbols.end(),
                                   [](const std::string& s) { return starts_with(s, "stitch_"); });
  std::string missing;
  for (std::string_view name : kAbiSymbols)
    if (program &&
        !std::binary_search(info.exported_symbols.begin(), info.exported_symbols.end(), name))
      missing += fmt::format("{}{}", missing.empty() ? "" : ", ", name);
  if (!missing.empty())
    add(out, HackKind::tampers_judge, false,
        fmt::format("does not export the program ABI's {} (include/stitch/program.h): the runner "
                    "cannot call it",
                    missing));
}

}  // namespace

bool shadows_runtime_function(std::string_view name) {
  if (starts_with(name, "cudaEvent") || starts_with(name, "cuEvent") ||
      starts_with(name, "cudaMemcpy") || starts_with(name, "cudaMemset") ||
      starts_with(name, "cudaMalloc") || starts_with(name, "cudaFree") ||
      starts_with(name, "cudaLaunch") || starts_with(name, "cuLaunch") ||
      starts_with(name, "cuMemcpy") || starts_with(name, "cudaGraphLaunch") ||
      starts_with(name, "cudaStream") || starts_with(name, "cuStream"))
    return true;
  return in_list(name, {"cudaDeviceSynchronize",
                        "cudaGetLastError",
                        "cudaPeekAtLastError",
                        "cudaGetErrorString",
                        "cudaCtxResetPersistingL2Cache",
                        "cudaSetDevice",
                        "cudaGetDevice",
                        "cuCtxSynchronize",
                        "cudaProfilerStart",
                        "cudaProfilerStop",
                        "clock_gettime",
                        "gettimeofday",
                        "clock",
                        "time",
                        "nanosleep",
                        "usleep",
                        "dlopen",
                        "dlsym",
                        "dlclose",
                        "dlerror",
                        "pthread_create",
                        "pthread_join",
                        "fork",
                        "exit",
                        "_exit",
                        "abort",
                        "malloc",
                        "free",
                        "calloc",
                        "realloc",
                        "memcpy",
                        "memcmp",
                        "write",
                        "read",
                        "open",
                        "fopen",
                        "fwrite",
                        "fflush",
                        "rename",
                        "getenv",
                        "stitch_runner_main"});
}

std::vector<HackFinding> classify_library(const ElfDynamicInfo& info) {
  std::vector<HackFinding> out;
  for (const std::string& lib : info.needed) {
    const std::string_view stem = library_stem(lib);
    if (is_torch_library(stem)) {
      add(out, HackKind::calls_torch, true,
          fmt::format("links {}: programs must not use PyTorch", lib));
    } else if (!is_allowed_library(stem)) {
      add(out, HackKind::hidden_work, true,
          fmt::format(
              "links unexpected library {}: programs link only the CUDA runtime, NVIDIA's math "
              "libraries and the C/C++ runtime",
              lib));
    }
  }
  // One finding per rule, naming a few of the symbols that matched it.
  auto report = [&](HackKind kind, bool fatal, std::string_view why,
                    const std::vector<std::string>& symbols) {
    if (symbols.empty()) return;
    std::string names;
    for (size_t i = 0; i < symbols.size() && i < 3; ++i)
      names += (i ? ", " : "") + symbols[i];
    if (symbols.size() > 3) names += fmt::format(" (and {} more)", symbols.size() - 3);
    add(out, kind, fatal, fmt::format("imports {}: {}", names, why));
  };
  for (const ImportRule& rule : kImportRules) {
    std::vector<std::string> matched;
    for (const std::string& symbol : info.imported_symbols)
      if (rule_matches(rule, symbol)) matched.push_back(symbol);
    report(rule.kind, rule.fatal, rule.why, matched);
  }
  std::vector<std::string> torch_symbols;
  for (const std::string& symbol : info.imported_symbols)
    if (is_torch_symbol(symbol)) torch_symbols.push_back(symbol);
  report(HackKind::calls_torch, true, "ATen/c10/torch/Python symbols", torch_symbols);
  classify_load_hooks(info, out);
  for (const std::string& symbol : info.exported_symbols)
    if (shadows_runtime_function(symbol))
      add(out, HackKind::tampers_judge, true,
          fmt::format("exports {}, which would shadow the runtime function of that name", symbol));
  return out;
}

Result<std::vector<HackFinding>> audit_library(const std::filesystem::path& so) {
  STITCH_ASSIGN_OR_RETURN(std::string bytes, read_file(so));
  auto parsed = parse_elf_dynamic(bytes);
  if (!parsed.ok()) return parsed.error().with_context(so.string());
  const ElfDynamicInfo& info = parsed.value();
  const bool links_cudart =
      std::any_of(info.needed.begin(), info.needed.end(),
                  [](const std::string& l) { return library_stem(l) == "libcudart"; });
  const bool imports_dlopen =
      std::binary_search(info.imported_symbols.begin(), info.imported_symbols.end(), "dlopen");
  if (!links_cudart && imports_dlopen && bytes.find("libcuda.so") != std::string::npos)
    return make_error(
        "{}: cudart appears to be linked statically; its own imports would hide the program's. "
        "Build with `nvcc -cudart shared`",
        so.string());
  return classify_library(info);
}

}  // namespace stitch
