// The Planner's options from a command's choices (planner_options.h).
#include "app/planner_options.h"

namespace stitch::app {

plan::TensorMath tensor_math_for(Track track) {
  switch (track) {
    case Track::fp32:
      return plan::TensorMath::fp32;
    case Track::tf32:
      return plan::TensorMath::tf32;
    case Track::bf16:
      return plan::TensorMath::bf16;
  }
  return plan::TensorMath::fp32;
}

plan::PlanOptions planner_options(const PlannerChoice& choice,
                                  const std::optional<GpuInfo>& local_gpu) {
  plan::PlanOptions options;
  if (!choice.gpu_name.empty())
    options.peaks = plan::peaks_for_gpu(choice.gpu_name);
  else if (local_gpu) {
    options.peaks = plan::peaks_for_gpu(local_gpu->name, local_gpu->sm_count);
    options.device_memory_bytes = local_gpu->memory_bytes;  // what this card has, not the table's
  }
  options.tensor_math = tensor_math_for(choice.track);
  options.allow_tf32x3 = !choice.strict_fp32_gemm;
  options.inference = choice.inference;
  return options;
}

Result<Track> track_from_option(const std::string& name) {
  if (auto track = enum_from_name<Track>(name)) return *track;
  return make_error(ErrorKind::bad_input, "unknown track '{}' (fp32, tf32, bf16)", name);
}

}  // namespace stitch::app
