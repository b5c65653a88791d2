// Precision tracks (DESIGN.md §6): which reduced-precision math a program may use on FP32 data, and
// the tolerance its outputs are compared with. A report always names its track.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace stitch {

enum class Track : uint8_t {
  fp32,  // FP32 arithmetic only; reference computed with TF32 off
  tf32,  // TF32 tensor-core math allowed
  bf16,  // TF32, FP16 and BF16 math allowed
};

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

constexpr std::string_view track_name(Track track) {
  switch (track) {
    case Track::fp32:
      return "fp32";
    case Track::tf32:
      return "tf32";
    case Track::bf16:
      return "bf16";
  }
  return "unknown";
}

constexpr std::optional<Track> parse_track(std::string_view name) {
  if (name == "fp32") return Track::fp32;
  if (name == "tf32") return Track::tf32;
  if (name == "bf16") return Track::bf16;
  return std::nullopt;
}

// fp32 uses KernelBench's current fp32 tolerance; the reduced tracks loosen it to 1e-2.
constexpr Tolerance track_tolerance(Track track) {
  return track == Track::fp32 ? Tolerance{1e-4, 1e-4} : Tolerance{1e-2, 1e-2};
}

}  // namespace stitch
