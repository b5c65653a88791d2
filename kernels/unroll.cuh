// Loop unrolling for functions that run on the device and in the CPU tests (__host__ __device__):
// the pragma on the device, nothing on the host, whose compilers do not know it (-Wall -Werror).
#pragma once

#if defined(__CUDA_ARCH__)
#define STITCH_PRAGMA(text) _Pragma(#text)
#define STITCH_UNROLL _Pragma("unroll")
#define STITCH_UNROLL_BY(count) STITCH_PRAGMA(unroll count)
#else
#define STITCH_UNROLL
#define STITCH_UNROLL_BY(count)
#endif
