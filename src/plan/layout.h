// Layout per region (issue 13 item 5): which values the plan stores channels-last.
//
// Values are NCHW (NCL, NCDHW) unless this pass says otherwise. A value is stored channels-last
// (NHWC, NLC, NDHWC: a home of its own buffer with channel stride 1, access.h's
// channels_last_access) where
//   - one of the project's forward convolution kernels (implicit GEMM or direct) writes it from
//     its stores, nothing of its epilogue left as a pass (conv_epilogue.h folded it all), through
//     its output map;
//   - every reader is an implicit-GEMM convolution whose wgmma gather reads channels-last (its
//     channels per group a multiple of 4) and reads it as x, nothing else;
//   - neither side is timed against cuDNN at init (cudnn_alternative: cuDNN reads and writes
//     NCHW).
// That always saves time: each such reader would transpose x per run (estimate_conv_igemm counts
// that transpose and drops it for a channels-last x), while the producer writes the same bytes in
// either layout. A region is such a chain of convolutions: VGG's conv + bias + ReLU blocks,
// AlexNet's conv3 to conv5. Graph inputs and outputs, cat pieces and values that passes, pools,
// GEMMs (1x1 convolutions lowered to them) or cuDNN read stay NCHW, so no conversion is ever
// inserted: the only conversions are the readers' own transposes, which the layout removes.
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
// (a plan rebuilt with the homes: the producer writes it through its output map, every reader
// gathers it as x).
bool channels_last_holds(const ir::Graph& graph, const ValueMap& values,
                         const std::vector<Subtask>& subtasks, const ValueMap& homes);

}  // namespace stitch::plan
