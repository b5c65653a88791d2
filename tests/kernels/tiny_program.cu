// The tiny program (tiny_program.cuh) as a whole translation unit with the C ABI exports: what
// headers_compile_test builds into a shared library (cpu), linked with the CUDA runtime alone.
#include "tiny_program.cuh"

STITCH_PROGRAM_EXPORTS(stitch::kernels::tiny::TinyProgram<true>)
