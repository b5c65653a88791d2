// The Planner's options from a command's choices (planner_options.h).
#include "app/planner_options.h"

#include <cstdlib>

#include <fmt/format.h>

namespace stitch::app {

namespace {

// STITCH_CONV_ENGINE=cudnn|igemm_tf32x3|direct forces the convolution engine of every command's
// plans where that engine can run the convolution (measuring them side by side on a GPU); unset
// or automatic: the time model. A bad value is reported and ignored.
plan::ConvEngine conv_engine_from_environment() {
  const char* value = std::getenv("STITCH_CONV_ENGINE");
  if (value == nullptr || *value == '\0') return plan::ConvEngine::automatic;
  if (auto engine = enum_from_name<plan::ConvEngine>(value)) return *engine;
  fmt::print(stderr,
             "warning: STITCH_CONV_ENGINE={} is not automatic, cudnn, igemm_tf32x3 or direct: "
             "ignored\n",
             value);
  return plan::ConvEngine::automatic;
}

}  // namespace

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
  options.conv_engine = conv_engine_from_environment();
  options.inference = choice.inference;
  return options;
}

Result<Track> track_from_option(const std::string& name) {
  if (auto track = enum_from_name<Track>(name)) return *track;
  return make_error(ErrorKind::bad_input, "unknown track '{}' (fp32, tf32, bf16)", name);
}

}  // namespace stitch::app
