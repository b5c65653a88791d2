// Layout per region (issue 13 item 5): which values the plan stores channels-last.
//
// Values are NCHW (NCL, NCDHW) unless this pass says otherwise. A value is stored channels-last
// (NHWC, NLC, NDHWC: a home of its own buffer with channel stride 1, access.h's
// channels_last_access) where
//   - one of the project's forward convolution kernels (implicit GEMM or direct) writes it from
//     its stores, nothing of its epilogue left as a pass (conv_epilogue.h folded it all), through
//     its output map; or a pool writes it (its store functor writes any layout);
//   - every reader is an implicit-GEMM convolution whose wgmma gather reads channels-last (its
//     channels per group a multiple of 4) and reads it as x, or a pool over all its spatial dims
//     reading it as its input, nothing else;
//   - a convolution timed against cuDNN at init (cudnn_alternative) on either side runs on the
//     tf32 / bf16 tracks (kernel_choice.h's cudnn_takes_channels_last: cuDNN's TF32 engines are
//     NHWC kernels, which read and write the layout without a transpose; the kernel epilogue's
//     pass after them takes either) and, as the producer, has no output transform (its pass
//     after cuDNN reads NCHW planes); on the fp32 track such a convolution stays NCHW;
//   - and it pays: a gather reads it, or a pool whose result is channels-last too; a pool's result
//     is channels-last only where its input is (the pool then takes its outputs channels fastest,
//     kernels/pooling.cuh, reading and writing coalesced).
// That always saves time: each gathering reader would transpose x per run (estimate_conv_igemm
// counts that transpose and drops it for a channels-last x), while the producers write the same
// bytes in either layout. A region is such a chain of convolutions and pools: VGG's conv + bias +
// ReLU blocks, AlexNet's conv2 -> max pool -> conv3 -> conv4 -> conv5. Graph inputs and outputs,
// cat pieces and values that elementwise passes, reductions (VGG's pools, whose windows tile their
// input: plan/lower_pooling.cc), GEMMs (1x1 convolutions lowered to them) or cuDNN alone read stay
// NCHW, so no conversion is ever inserted: the only conversions are the readers' own transposes
// (and cuDNN's), which the layout removes.
//
// channels_last_homes picks the values in a plan whose kernels are chosen and epilogues folded;
// the planner then rebuilds the plan with those homes (fold_views, fusion, kernel choice again)
// and keeps it only where channels_last_holds.
#pragma once

#include <vector>

#include "plan/fusion.h"
#include "plan/plan.h"

namespace stitch::plan {

// The values to store channels-last in `subtasks` (built with `values`, keys value_key()), by the
// rule above, as homes: value_key() -> channels_last_access of the value's own buffer. Empty
// where none qualifies, or `peaks` has no TF32 tensor cores (no wgmma gather to feed).
ValueMap channels_last_homes(const ir::Graph& graph, const ValueMap& values,
                             const std::vector<Subtask>& subtasks, const GpuPeaks& peaks);

// Every value of `homes` still has its home in `values` and still meets the rule in `subtasks`
// (a plan rebuilt with the homes: its producer writes it through its output map or store functor,
// every reader gathers or pools it, and it still pays).
bool channels_last_holds(const ir::Graph& graph, const ValueMap& values,
                         const std::vector<Subtask>& subtasks, const ValueMap& homes);

}  // namespace stitch::plan
