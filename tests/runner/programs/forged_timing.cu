// Adversarial (HACKS.md row 13): the program patches the runner's own memory — the GOT entry through
// which stitch-runner calls cudaEventElapsedTime — so that every event time the runner reads is ten
// times smaller, and spins ~5 ms per forward so the difference is large. The outputs are honest.
// Expected: the supervisor's timing cross-check (runner/timing_check.h) reports timing_forged.
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "adversarial_common.h"

namespace {

using ElapsedFn = cudaError_t (*)(float*, cudaEvent_t, cudaEvent_t);
ElapsedFn real_elapsed = nullptr;

cudaError_t forged_elapsed(float* ms, cudaEvent_t start, cudaEvent_t end) {
  cudaError_t status = real_elapsed(ms, start, end);
  if (status == cudaSuccess) *ms /= 10.0f;
  return status;
}

// Rewrites the executable's relocation slots of cudaEventElapsedTime; counts them in `data`.
int patch_executable(dl_phdr_info* info, size_t, void* data) {
  if (info->dlpi_name && info->dlpi_name[0] != '\0') return 0;  // the executable comes first
  ElfW(Addr) base = info->dlpi_addr;
  auto absolute = [&](ElfW(Addr) address) { return address < base ? address + base : address; };
  const ElfW(Dyn)* dynamic = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dynamic = reinterpret_cast<const ElfW(Dyn)*>(base + info->dlpi_phdr[i].p_vaddr);
  if (!dynamic) return 1;
  const ElfW(Sym)* symbols = nullptr;
  const char* strings = nullptr;
  const ElfW(Rela)* tables[2] = {nullptr, nullptr};
  size_t sizes[2] = {0, 0};
  for (const ElfW(Dyn)* entry = dynamic; entry->d_tag != DT_NULL; ++entry) {
    if (entry->d_tag == DT_SYMTAB)
      symbols = reinterpret_cast<const ElfW(Sym)*>(absolute(entry->d_un.d_ptr));
    if (entry->d_tag == DT_STRTAB)
      strings = reinterpret_cast<const char*>(absolute(entry->d_un.d_ptr));
    if (entry->d_tag == DT_JMPREL)
      tables[0] = reinterpret_cast<const ElfW(Rela)*>(absolute(entry->d_un.d_ptr));
    if (entry->d_tag == DT_PLTRELSZ) sizes[0] = entry->d_un.d_val;
    if (entry->d_tag == DT_RELA)
      tables[1] = reinterpret_cast<const ElfW(Rela)*>(absolute(entry->d_un.d_ptr));
    if (entry->d_tag == DT_RELASZ) sizes[1] = entry->d_un.d_val;
  }
  if (!symbols || !strings) return 1;
  long page = sysconf(_SC_PAGESIZE);
  for (int t = 0; t < 2; ++t) {
    for (size_t i = 0; tables[t] && i < sizes[t] / sizeof(ElfW(Rela)); ++i) {
      const ElfW(Rela)& relocation = tables[t][i];
      const char* name = strings + symbols[ELF64_R_SYM(relocation.r_info)].st_name;
      if (std::strcmp(name, "cudaEventElapsedTime") != 0) continue;
      auto* slot = reinterpret_cast<void**>(base + relocation.r_offset);
      auto page_start = reinterpret_cast<uintptr_t>(slot) & ~static_cast<uintptr_t>(page - 1);
      mprotect(reinterpret_cast<void*>(page_start), page, PROT_READ | PROT_WRITE);
      *slot = reinterpret_cast<void*>(&forged_elapsed);
      ++*static_cast<int*>(data);
    }
  }
  return 1;
}

__global__ void spin_kernel(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

}  // namespace

int program_init_hook(adversarial::State* state) {
  real_elapsed = reinterpret_cast<ElapsedFn>(dlsym(RTLD_DEFAULT, "cudaEventElapsedTime"));
  int patched = 0;
  if (real_elapsed) dl_iterate_phdr(patch_executable, &patched);
  if (patched == 0) state->error = "could not patch the runner (the test would mean nothing)";
  return patched > 0 ? STITCH_OK : STITCH_ERROR_INTERNAL;
}

int program_forward(adversarial::State* state, const stitch_tensor* inputs, stitch_tensor* outputs,
                    cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(10'000'000);  // ~5 ms at ~2 GHz
  return adversarial::launch_compute(state, inputs[0], outputs[0], stream);
}
