// Precision tracks (DESIGN.md §6): which reduced-precision math a program may use on FP32 data, and
// the tolerance its outputs are compared with. A report always names its track.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "util/enum_names.h"

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

// enum_name(track) / enum_from_name<Track>(name): "fp32", "tf32", "bf16".
inline constexpr std::array<std::string_view, 3> kTrackNames = {"fp32", "tf32", "bf16"};
constexpr const auto& enum_names(Track) { return kTrackNames; }
static_assert(names_every_enumerator(Track::bf16));

// fp32 uses KernelBench's current fp32 tolerance; the reduced tracks loosen it to 1e-2.
constexpr Tolerance track_tolerance(Track track) {
  return track == Track::fp32 ? Tolerance{1e-4, 1e-4} : Tolerance{1e-2, 1e-2};
}

}  // namespace stitch
