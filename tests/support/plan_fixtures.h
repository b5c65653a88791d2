// The plan fixtures (tests/plan/data/<name>.graph.json, captured from tests/tasks/<name>.py) that
// the golden tests walk: the plan goldens (tests/plan/golden) and the program goldens
// (tests/codegen/golden). A new fixture goes here, with its goldens.
#pragma once

#include <string_view>

#include "plan/passes.h"

namespace stitch::testing {

inline constexpr const char* kPlanFixtures[] = {
    "plan_gemm_bias_relu",
    "plan_linear_gelu_residual",
    "plan_broadcast_chain",
    "plan_softmax_last",
    "plan_layernorm_relu",
    "plan_rmsnorm_features",
    "plan_rmsnorm_last",
    "plan_reduce_middle",
    "plan_bmm_scale",
    "plan_linear_batchnorm",
    "plan_logsumexp",
    "plan_logsumexp_channels",
    "plan_groupnorm_logsumexp",
    "plan_scan_refused",
    "plan_gemm_tf32x3",
    "plan_gemm_sum",
    "plan_triangular_matmul",
    "plan_pooling",
    "plan_batchnorm_train2d",
    "plan_batchnorm_train1d",
    "plan_conv2d_bias_relu",
    "plan_conv1d_transpose",
    "plan_conv3d",
    "plan_conv_padded_dilated",
    "plan_conv_grouped",
    "plan_conv_transpose2d",
    "plan_conv1x1",
    "plan_conv_residual",
    "plan_conv_igemm",
    "plan_conv_transpose_igemm",
    "plan_conv_direct",
    "plan_conv_transpose_direct",
    "plan_conv_channel_min",
    "plan_conv_channel_mean",
    "plan_conv_igemm_channel_min",
    "plan_conv_channels_last",
    "plan_conv_pool_channels_last",
    "plan_conv_timed",
    "plan_conv_timed_transform",
    "plan_conv_timed_cat",
    "plan_conv_bn_prologue",
    "plan_bn_running_stats",
    "plan_bn_relu6_depthwise",
    "plan_conv_bn_eval",
    "plan_cat_dense_block",
    "plan_dense_block_stats",
    "plan_cat_fire",
    "plan_cat_inception",
    "plan_cat_unet",
    "plan_channel_shuffle",
    "plan_attention_softmax",
    "plan_attention_causal",
    "plan_attention_mask_input",
    "plan_attention_relu",
    "plan_attention_sdpa",
    "plan_scan_masked",
    "plan_scan_reverse",
    "plan_scan_exclusive",
    "plan_ssd_chunk_states",
    "plan_flip_clamp",
    "plan_gather",
    "plan_cross_entropy",
    "plan_multihead_attention",
    "plan_transformer_encoder_layer",
    "plan_transformer_sequence_first",
    "plan_gru_hidden",
    "plan_rnn_tanh_bidirectional",
    "plan_lstm_cn",
    "plan_rnn_dropout_refused",
    "plan_rnn_loop_stacked",
    "plan_rnn_loop_last_hidden",
    "plan_rnn_loop_relu",
    "plan_rnn_loop_not_recurrent",
    "plan_rnn_loop_batch_first_maps",
};

// The fixtures the built-in Planner refuses (their plan golden is the refusal; no program).
inline bool plan_fixture_refused(std::string_view name) {
  return name == "plan_scan_refused" || name == "plan_rnn_dropout_refused";
}

// The options a fixture is planned with (its goldens and round trips): the defaults, but for
// plan_conv_igemm, plan_conv_transpose_igemm and plan_conv_igemm_channel_min, which force the
// implicit-GEMM 3xTF32 convolution, and plan_conv_direct, plan_conv_transpose_direct and the
// channel reductions (plan_conv_channel_*), which force the direct kernel. The automatic choice
// keeps cuDNN for them (the igemm: at the efficiencies measured on the H200; the direct kernel:
// until measured), and the fixtures cover the kernels' plans and programs.
inline plan::PlanOptions plan_fixture_options(std::string_view name) {
  plan::PlanOptions options;
  if (name == "plan_conv_igemm" || name == "plan_conv_transpose_igemm" ||
      name == "plan_conv_igemm_channel_min")
    options.conv_engine = plan::ConvEngine::igemm_tf32x3;
  if (name == "plan_conv_direct" || name == "plan_conv_transpose_direct" ||
      name.starts_with("plan_conv_channel_"))
    options.conv_engine = plan::ConvEngine::direct;
  return options;
}

}  // namespace stitch::testing
