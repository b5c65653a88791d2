// What the built-in judge sees in a program's text and its SASS: own kernels, tiling, tensor-core
// and vector instructions, library calls and epilogues, graph capture, and signs of PyTorch. Pure
// functions over strings, so each signal is unit-tested on snippets.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "reward/evidence.h"

namespace stitch::reward {

struct ProgramFeatures {
  int own_kernels = 0;         // __global__ functions defined
  int launch_sites = 0;        // <<<...>>> launches in the source
  bool shared_tiling = false;  // __shared__ arrays
  bool tensor_cores = false;   // mma/wgmma in the source, or HMMA/HGMMA/IMMA in the SASS
  bool tensor_cores_in_sass = false;
  bool vectorised = false;        // float4/int4 accesses, ld/st .v4, or 128-bit LDG/STG in the SASS
  bool library_gemm = false;      // cuBLAS / cuBLASLt matmuls
  bool library_conv = false;      // cuDNN convolutions
  bool library_norm = false;      // cuDNN softmax, pooling, batch/layer normalisation
  bool library_epilogue = false;  // a cuBLASLt epilogue other than the default
  bool graph_capture = false;     // CUDA graph capture / launch
  bool python = false;            // a Python source among the program's files
  std::vector<std::string> torch_uses;  // "program.cu: #include <torch/extension.h>"
};

// The text with // and /* */ comments blanked out (string literals are kept as they are).
std::string strip_comments(std::string_view text);

ProgramFeatures scan_program(const std::vector<SourceText>& sources, std::string_view sass);

// What the build says, over what the text suggests: the kernels ptxas compiled are the program's
// own (wherever their source came from), with their static shared memory; a built program with
// none has no own kernels, whatever its included headers define.
void add_build_facts(ProgramFeatures& features, const VerifyReport& verify);

}  // namespace stitch::reward
