// Static hack checks on a candidate program's sources (HACKS.md rows 1, 2, 3, 8, 12, 13/20, 14, 21,
// 22, 27, 29; load-time hooks and raw system calls in verify/checks/source_hooks.h). What a program
// may make the compiler read (row 31) is verify/checks/include_policy.h, run before the build. Sources are lexed first (verify/checks/source_lexer.h), so comments and string literals
// neither trip nor hide a check; strings are read only where they matter (inline PTX in asm
// statements, library names, paths of the judge's files). The checks are a first layer: the library
// audit (verify/checks/library_audit.h) reads what the built program really imports, and the runner
// checks what it really does.
//
// Findings name file:line and the text matched. Fatal findings make the attempt `hacked`; non-fatal
// ones are notes for the runner and the feedback (e.g. a side stream that is joined).
//
// Precision (row 12) depends on the track:
//   fp32  flags TF32, FP16, BF16, FP8/INT8/FP4 math and conversions (PTX, intrinsics, types, cuBLAS
//         compute types and math modes, cuDNN data and math types).
//   tf32  allows TF32; flags FP16/BF16 and narrower.
//   bf16  allows TF32, FP16 and BF16; flags FP8/INT8/FP4.
// Split-precision 3xTF32 (x = big + small, big = tf32(x), small = tf32(x - big), three TF32
// products) is accurate to FP32 and allowed on the fp32 track. It is recognised by its pattern, not
// by a marker (a marker costs a cheater nothing): a TF32 rounding (`__float_to_tf32`,
// `cvt.rna.tf32.f32` in inline asm, or a function wrapping one) whose argument subtracts the result
// of another TF32 rounding, directly (`tf32(x - big)`) or through a variable (`r = x - big;
// tf32(r)`); CUTLASS's OpMultiplyAddFastF32 counts too. When recognised, the program's direct TF32
// uses (PTX, wmma precision::tf32, __float_to_tf32) become non-fatal notes; library TF32 modes
// (cuBLAS CUBLAS_COMPUTE_32F_FAST_TF32, ...) stay fatal, since a library never splits. The judge's
// relative-error-norm threshold is what finally decides.
#pragma once

#include <string>
#include <vector>

#include "verify/track.h"
#include "verify/verdict.h"

namespace stitch {

struct SourceFile {
  std::string path;  // as it should appear in findings (relative to the attempt directory)
  std::string text;
};

// All findings for the program made of `sources` (one program: stream joins and the 3xTF32 pattern
// are looked for across all its files). Never fails: unreadable sources are the caller's error.
std::vector<HackFinding> check_sources(const std::vector<SourceFile>& sources, Track track);

}  // namespace stitch
