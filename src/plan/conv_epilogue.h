// A convolution's epilogue folded into the project's own convolution kernels (issue 13 item 1).
// The implicit-GEMM and direct kernels apply act(conv + bias[co]) as they store (MatmulEpilogue,
// kernels/matmul.cuh), where cuDNN's path writes the raw result and reads it back in the epilogue
// pass. Folding the head of the epilogue chain into the kernel saves that pass whenever the chain
// is just the bias and a ReLU or tanh-form GELU (VGG's and AlexNet's conv + bias + ReLU;
// SqueezeNet's and GoogleNet's into their cats' windows), and the raw result's buffer always.
// The kernels also take the rest of a chain of per-element work (level 2's conv + scale +
// activations) as an output transform, a functor the generated program gives them.
//
// Run after kernel choice (the fold depends on the engine) and before the cost and memory plans.
#pragma once

#include <cstddef>
#include <vector>

#include "plan/fusion.h"  // ValueMap
#include "plan/plan.h"

namespace stitch::plan {

// Folds subtasks[index]'s epilogue head into its kernel (ConvSpec::kernel_epilogue) where:
// the kernel is igemm_tf32x3_conv or direct_conv; the raw result is read by one epilogue step and
// nothing else (no other subtask, no graph output); that step adds a contiguous [out_channels]
// vector broadcast over the rest, or is a ReLU / tanh-form GELU, and an activation after the bias
// add is that add's only reader; and the last folded node's value owns a contiguous buffer, or,
// for a forward convolution, is a window of a larger one (a cat's: plan/cat_placement.h) the
// kernel writes through its output map. Where cuDNN is timed against the kernel
// (cudnn_alternative, kernel_choice.h), only a whole chain folds, into a buffer of its own or a
// window of whole channels of a cat's (cuDNN's side then runs the folded head as its one pass).
// Returns whether it folded anything. The epilogue pass goes away when nothing of the chain
// remains.
bool fold_conv_epilogue(const ir::Graph& graph, const ValueMap& values,
                        std::vector<Subtask>& subtasks, size_t index);

// Then what remains of the epilogue, whole, as the kernel's output transform
// (ConvSpec::output_transform): where subtasks[index] runs on igemm_tf32x3_conv or direct_conv;
// its epilogue stores exactly one value (a float32 one), from a step, and the kernel's result
// (stores[0]) is read by nothing else; every load but the result is one value per (n, c) plane
// (a per-channel bias or scale, a scalar); it evaluates few special functions per element (exp,
// tanh, erf ...: at most one on the implicit GEMM, three on the direct kernel, as measured); and
// the stored value's home is as for the head (where cuDNN is timed against the kernel: a dense
// buffer of its own and no kernel epilogue, cuDNN's side transforming its output in place). The
// pass and the result's buffer go away. Returns whether it folded.
bool fold_conv_output_transform(const ir::Graph& graph, const ValueMap& values,
                                std::vector<Subtask>& subtasks, size_t index);

// Then a reduction over the output channels into the kernel (ConvSpec::channel_reduce): where
// subtasks[index] runs on direct_conv or igemm_tf32x3_conv, forward, one group, with no epilogue
// or output transform left and the kernel able to (kernel_reduces_channels below); its result is
// read by one later subtask and nothing else (no graph output), a sum, max or min over the
// channels of the whole result as it is stored ([batch, out_channels, positions], values only,
// not min's indices); that reduction's prologue loads one value per (n, c) plane and evaluates at
// most the special functions the kernel's output transform may (three on the direct kernel, one
// on the implicit GEMM) — its head, a bias and activation, becomes the kernel epilogue as
// fold_conv_epilogue's does, the rest the output transform —, its epilogue loads one value per
// image (it becomes the reduce epilogue), and it stores one float32 value into a buffer of its
// own. The reduction's subtask goes away (ids renumbered). Returns whether it folded.
bool fold_conv_channel_reduction(const ir::Graph& graph, const ValueMap& values,
                                 std::vector<Subtask>& subtasks, size_t index);

// Whether the subtask's kernel reduces `spec`'s channels as fold_conv_channel_reduction asks: the
// direct kernel where it can (direct_conv_reduces_channels under the subtask's math), or the
// implicit GEMM where it can (conv_igemm_reduces_channels) and no cuDNN is timed against it
// (forced, or cuDNN cannot run it). Timed, cuDNN may win at init, and the estimates did not say
// when: on the H100 (2026-12-07, tf32), 32_Conv2d_Scaling_Min's conv + min over 128 channels ran
// in 5.01 ms reduced by the implicit GEMM against 4.82 ms as the timed pair and a reduction pass.
bool kernel_reduces_channels(const Subtask& subtask, const ConvSpec& spec);

}  // namespace stitch::plan
