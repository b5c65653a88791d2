// The built-in Planner's options as every command sets them — plan, generate, run and bench's
// prepare step — so that one task gets one plan whichever command made it: the peaks of the named
// GPU, else of the local one, else H200's; the tensor-core math the precision track allows;
// --strict-fp32-gemm (no 3xTF32 GEMMs or convolutions); and the environment's STITCH_CONV_ENGINE
// (cudnn | igemm_tf32x3: forces the convolution engine, for measurements).
#pragma once

#include <optional>
#include <string>

#include "plan/passes.h"
#include "util/result.h"
#include "verify/build/gpu_info.h"
#include "verify/track.h"

namespace stitch::app {

struct PlannerChoice {
  Track track = Track::fp32;
  bool strict_fp32_gemm = false;  // fp32: no split-precision 3xTF32 either
  std::string gpu_name;           // plan for this GPU's peaks; empty: the local GPU's
  bool inference = false;         // eval semantics: BatchNorm from its running statistics
};

// fp32 → fp32 (strict or split 3xTF32, FP32-accurate); tf32 → TF32 tensor cores; bf16 → BF16
// tensor cores (both with FP32 accumulation).
plan::TensorMath tensor_math_for(Track track);

plan::PlanOptions planner_options(const PlannerChoice& choice,
                                  const std::optional<GpuInfo>& local_gpu);

// A --track value; a bad_input Error naming the tracks for anything else.
Result<Track> track_from_option(const std::string& name);

}  // namespace stitch::app
