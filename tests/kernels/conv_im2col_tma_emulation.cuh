// The im2col TMA load (kernels/conv_igemm_im2col_tma.cuh) emulated on the CPU as that header reads
// the PTX ISA ("Tensors: im2col mode"): a walk of `pixels` positions in N, D, H, W raster order
// over the bounding box, stepping by the traversal stride, wrapping into the next image; the
// offsets added to every position; zeros outside x. Shared by the CPU test of the kernel's
// coordinates (conv_igemm_plan_test.cu) and the GPU probe that holds the hardware to it
// (conv_igemm_tf32x3_test.cu): where the probe disagrees, the reading is wrong, and its report
// says which position went where.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/conv_igemm_im2col_tma.cuh"

namespace stitch::kernels::testing {

// One load's coordinates as the instruction takes them, the spatial arrays W first.
struct Im2colLoad {
  int channel = 0;
  int start[3] = {};  // W, H, D
  int image = 0;
  int offset[3] = {};  // W, H, D
};

inline Im2colLoad im2col_load(const detail::ConvIm2colCoords& c) {
  Im2colLoad load;
  load.channel = c.channel, load.image = c.image;
  load.start[0] = c.w, load.start[1] = c.h, load.start[2] = c.d;
  load.offset[0] = c.off_w, load.offset[1] = c.off_h, load.offset[2] = c.off_d;
  return load;
}

// Where a walk position lies: its image and spatial coordinates (W first) before the offsets.
struct Im2colPosition {
  int image = 0;
  int at[3] = {};
};

// The walk's positions, in order; `inside_box` false where the start lies outside the bounding
// box (the PTX ISA requires it inside).
inline std::vector<Im2colPosition> im2col_walk(const detail::ConvIm2colMapFields& f,
                                               const Im2colLoad& load, int pixels,
                                               bool* inside_box = nullptr) {
  const int spatial = f.rank - 2;
  Im2colPosition at;
  at.image = load.image;
  bool inside = true;
  for (int i = 0; i < spatial; ++i) {
    at.at[i] = load.start[i];
    const int64_t last = static_cast<int64_t>(f.dims[1 + i]) - 1 + f.upper[i];
    inside = inside && at.at[i] >= f.lower[i] && at.at[i] <= last;
  }
  if (inside_box != nullptr) *inside_box = inside;
  std::vector<Im2colPosition> walk;
  for (int r = 0; r < pixels; ++r) {
    walk.push_back(at);
    for (int i = 0; i < spatial; ++i) {  // W first: the innermost dim steps, the others carry
      at.at[i] += static_cast<int>(f.element_strides[1 + i]);
      if (at.at[i] <= static_cast<int64_t>(f.dims[1 + i]) - 1 + f.upper[i]) break;
      at.at[i] = f.lower[i];
      if (i == spatial - 1) ++at.image;
    }
  }
  return walk;
}

// The index in x (channels-last, f's dims) of channel 0 at walk position `p` shifted by the
// load's offsets, or -1 where that lies outside x (zeros).
inline int64_t im2col_source(const detail::ConvIm2colMapFields& f, const Im2colLoad& load,
                             const Im2colPosition& p) {
  const int spatial = f.rank - 2;
  if (p.image < 0 || static_cast<uint64_t>(p.image) >= f.dims[f.rank - 1]) return -1;
  int64_t index = p.image;
  for (int i = spatial - 1; i >= 0; --i) {
    const int64_t x = int64_t{p.at[i]} + load.offset[i];
    if (x < 0 || static_cast<uint64_t>(x) >= f.dims[1 + i]) return -1;
    index = index * static_cast<int64_t>(f.dims[1 + i]) + x;
  }
  return index * static_cast<int64_t>(f.dims[0]);
}

// The tile [pixels][channels] (row r = walk position r, unswizzled) one load brings from x.
inline std::vector<float> emulate_im2col_tma(const detail::ConvIm2colMapFields& f,
                                             const std::vector<float>& x, const Im2colLoad& load,
                                             int pixels = detail::kIm2colPixels,
                                             int channels = detail::kIm2colChannels) {
  std::vector<float> tile(static_cast<size_t>(pixels) * channels, 0.0f);
  const std::vector<Im2colPosition> walk = im2col_walk(f, load, pixels);
  for (int r = 0; r < pixels; ++r) {
    const int64_t source = im2col_source(f, load, walk[r]);
    if (source < 0) continue;
    for (int c = 0; c < channels; ++c)
      if (static_cast<uint64_t>(load.channel + c) < f.dims[0])
        tile[static_cast<size_t>(r) * channels + c] = x[source + load.channel + c];
  }
  return tile;
}

// A walk position as text: "image n (w, h, d)" with the spatial dims the map has.
inline std::string im2col_position_name(const detail::ConvIm2colMapFields& f,
                                        const Im2colPosition& p) {
  std::string out = "image " + std::to_string(p.image) + " (";
  for (int i = 0; i < f.rank - 2; ++i)
    out += (i > 0 ? ", " : "") + std::to_string(p.at[i]);
  return out + ")";
}

}  // namespace stitch::kernels::testing
