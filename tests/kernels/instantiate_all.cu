// Instantiates every kernel-library template the way generated programs do (functors defined in
// the program, C++17), so headers_compile_test.cc can build all the device code for sm_80 and sm_90
// without a GPU. Not linked into any binary.
#include <string>

#include "kernels/attention.cuh"
#include "kernels/attention_mma.cuh"
#include "kernels/conv_direct.cuh"
#include "kernels/conv_engine_timing.cuh"
#include "kernels/conv_igemm_tf32x3.cuh"
#include "kernels/conv_transpose.cuh"
#include "kernels/elementwise.cuh"
#include "kernels/gemm_tf32x3.cuh"
#include "kernels/matmul.cuh"
#include "kernels/matmul_tf32x3.cuh"
#include "kernels/pooling.cuh"
#include "kernels/program_support.cuh"
#include "kernels/reduction.cuh"
#include "kernels/row.cuh"
#include "kernels/runtime.cuh"
#include "kernels/scan.cuh"

namespace {

using namespace stitch::kernels;

struct Fill {
  __device__ void operator()(float (&y)[1]) const { y[0] = 0.0f; }
};
struct Binary {
  float alpha;
  __device__ void operator()(const float (&x)[2], float (&y)[1]) const {
    y[0] = alpha * x[0] + x[1];
  }
};
struct Ternary {
  __device__ void operator()(const float (&x)[3], float (&y)[2]) const {
    y[0] = x[0] * x[1] + x[2];
    y[1] = x[2];
  }
};
struct Pro {
  const float* x;
  __device__ float operator()(int64_t o, int64_t r, int64_t i) const { return x[o + r + i]; }
};
template <class T>
struct Epi {
  T* y;
  __device__ void operator()(int64_t o, int64_t i, T v) const { y[o + i] = v; }
};
struct Load {
  const float* x;
  __device__ float operator()(int64_t r, int64_t c) const { return x[r + c]; }
};
struct Store {
  float* y;
  __device__ void operator()(int64_t r, int64_t c, float v) const { y[r + c] = v; }
};
struct ScanStore {
  float* y;
  __device__ void operator()(int64_t o, int64_t p, int64_t i, float v) const { y[o + p + i] = v; }
};
struct PoolLoad {
  const float* x;
  __device__ float operator()(int64_t o, int64_t d, int64_t h, int64_t w) const {
    return x[o + d + h + w];
  }
};
struct PoolStore {
  float* y;
  int64_t* index;
  __device__ void operator()(int64_t e, float v, int64_t i) const {
    y[e] = v;
    if (index != nullptr) index[e] = i;
  }
};
struct ScaleShift {  // a convolution input transform (plane_transform.cuh)
  const float* per_plane;
  __device__ float operator()(int64_t plane, float x) const { return x * per_plane[plane]; }
};

int forward(const float* a, float* y, void* workspace, cublasLtHandle_t handle, cudaStream_t stream,
            std::string& error) {
  const int64_t shape[2] = {4, 4};
  const TensorOperand in[3] = {
      {a, kDtypeFloat32, 0, {4, 1}}, {a, kDtypeFloat32, 0, {0, 1}}, {a, kDtypeInt64, 0, {1, 0}}};
  const TensorOperand two[2] = {in[0], in[1]};
  const OutOperand out[2] = {{y, kDtypeFloat32, 0, {4, 1}}, {y, kDtypeInt32, 0, {4, 1}}};
  const OutOperand one[1] = {out[0]};
  STITCH_CHECK_CUDA(launch_elementwise(Fill{}, nullptr, one, 2, shape, stream));
  STITCH_CHECK_CUDA((launch_elementwise<0, 1>(Fill{}, nullptr, one, 2, shape, stream)));
  STITCH_CHECK_CUDA(launch_elementwise(Binary{2.0f}, two, one, 2, shape, stream));
  STITCH_CHECK_CUDA(launch_elementwise(Ternary{}, in, out, 2, shape, stream, 128));
  STITCH_CHECK_LAUNCH();

  STITCH_CHECK_CUDA(
      launch_reduce<ReduceOp::sum>(4, 4, 1, Pro{a}, Epi<float>{y}, workspace, stream));
  STITCH_CHECK_CUDA(launch_reduce<ReduceOp::max>(4, 4, 2, Pro{a}, Epi<float>{y}, stream));
  STITCH_CHECK_CUDA(launch_reduce<ReduceOp::min>(4, 4, 1, Pro{a}, Epi<float>{y}, stream));
  STITCH_CHECK_CUDA(launch_reduce<ReduceOp::prod>(4, 4, 1, Pro{a}, Epi<float>{y}, stream));
  STITCH_CHECK_CUDA(launch_reduce<ReduceOp::logsumexp>(4, 4, 1, Pro{a}, Epi<float>{y}, stream));
  ValueIndex* vi = reinterpret_cast<ValueIndex*>(workspace);
  MeanVar* mv = reinterpret_cast<MeanVar*>(workspace);
  STITCH_CHECK_CUDA(launch_reduce<ReduceOp::argmax>(4, 4, 1, Pro{a}, Epi<ValueIndex>{vi}, stream));
  STITCH_CHECK_CUDA(launch_reduce<ReduceOp::argmin>(4, 4, 1, Pro{a}, Epi<ValueIndex>{vi}, stream));
  STITCH_CHECK_CUDA(launch_reduce<ReduceOp::mean_var>(4, 4, 1, Pro{a}, Epi<MeanVar>{mv}, stream));

  PoolShape pool;
  pool.in[2] = pool.out[2] = 4;
  STITCH_CHECK_CUDA((launch_pool<PoolKind::max>(pool, PoolLoad{a}, PoolStore{y, nullptr}, stream)));
  STITCH_CHECK_CUDA((launch_pool<PoolKind::avg>(pool, PoolLoad{a}, PoolStore{y, nullptr}, stream)));
  STITCH_CHECK_CUDA(
      (launch_pool<PoolKind::adaptive_max>(pool, PoolLoad{a}, PoolStore{y, nullptr}, stream)));
  STITCH_CHECK_CUDA(
      (launch_pool<PoolKind::adaptive_avg>(pool, PoolLoad{a}, PoolStore{y, nullptr}, stream)));

  STITCH_CHECK_CUDA((launch_scan<ScanKind::sum>(ScanStrategy::warp_rows, 4, 4, 1, false, false,
                                                Pro{a}, ScanStore{y}, stream)));
  STITCH_CHECK_CUDA((launch_scan<ScanKind::prod>(ScanStrategy::columns, 4, 4, 2, true, true, Pro{a},
                                                 ScanStore{y}, stream)));

  STITCH_CHECK_CUDA(launch_softmax(4, 4, false, Load{a}, Store{y}, stream));
  STITCH_CHECK_CUDA(launch_layer_norm(4, 4, 1e-5f, a, a, Load{a}, Store{y}, stream));
  STITCH_CHECK_CUDA(launch_rms_norm(4, 4, 1e-6f, nullptr, Load{a}, Store{y}, stream));

  MatmulShape mm_shape;
  mm_shape.m = mm_shape.n = mm_shape.k = 4;
  mm_shape.lda = mm_shape.ldb = mm_shape.ldc = 4;
  LtMatmul mm;
  STITCH_CHECK(mm.init(handle, mm_shape, MatmulEpilogue::bias_gelu, {}, workspace, 1 << 20, error));
  STITCH_CHECK(mm.tune(a, a, y, a, stream, error));
  STITCH_CHECK(mm.run(a, a, nullptr, y, a, 1.0f, 0.0f, stream, error));
  Tf32x3Matmul mm3;
  STITCH_CHECK(
      mm3.init(handle, mm_shape, MatmulEpilogue::bias_relu, {}, workspace, 1 << 20, error));
  STITCH_CHECK(mm3.tune(a, a, y, a, stream, error));
  STITCH_CHECK(tune_on_scratch(mm, 16, 16, 16, 4, stream, error));
  STITCH_CHECK(tune_on_scratch(mm3, 16, 16, 16, 4, stream, error, 2));
  STITCH_CHECK(mm3.prepare_b(a, stream, error));
  STITCH_CHECK(mm3.run(a, nullptr, nullptr, y, a, 1.0f, 0.0f, stream, error));
  GemmTf32x3 gemm3;
  STITCH_CHECK(
      gemm3.init(handle, mm_shape, MatmulEpilogue::bias_gelu, true, workspace, 1 << 20, error));
  STITCH_CHECK(gemm3.prepare_b(a, stream, error));
  STITCH_CHECK(gemm3.run(a, nullptr, y, y, a, 1.0f, 1.0f, stream, error));
  ConvIgemmShape conv_shape;
  conv_shape.in_channels = conv_shape.out_channels = 4;
  ConvIgemmTf32x3 conv3;
  STITCH_CHECK(conv3.init(conv_shape, MatmulEpilogue::bias_relu, error));
  STITCH_CHECK(conv3.prepare_weights(a, stream, error));
  STITCH_CHECK(conv3.run(a, nullptr, a, y, stream, error));
  ConvIgemmTf32 conv1;  // one TF32 product (the tf32 track), with both transforms
  conv1.set_input_transform(true);
  STITCH_CHECK(conv1.init<ScaleShift>(conv_shape, MatmulEpilogue::bias_relu, error));
  STITCH_CHECK(conv1.prepare_weights(a, stream, error));
  STITCH_CHECK(conv1.run(a, nullptr, a, y, stream, error, ScaleShift{a}, ScaleShift{a}));
  ConvTransposeShape transposed_shape;
  transposed_shape.in_channels = transposed_shape.out_channels = 4;
  ConvTransposeIgemmTf32 transposed1;
  STITCH_CHECK(transposed1.init(transposed_shape, MatmulEpilogue::bias_gelu, error));
  STITCH_CHECK(transposed1.prepare_weights(a, stream, error));
  STITCH_CHECK(transposed1.run(a, nullptr, a, y, stream, error));
  ConvTransposeIgemmTf32x3 transposed3;
  STITCH_CHECK(transposed3.init(transposed_shape, MatmulEpilogue::bias_gelu, error));
  STITCH_CHECK(transposed3.prepare_weights(a, stream, error));
  STITCH_CHECK(transposed3.run(a, nullptr, a, y, stream, error));
  ConvTransposeDirect transposed_direct;
  STITCH_CHECK(transposed_direct.init(transposed_shape, MatmulEpilogue::bias_relu, error));
  STITCH_CHECK(transposed_direct.prepare_weights(a, stream, error));
  STITCH_CHECK(transposed_direct.run(a, nullptr, a, y, stream, error));
  ConvDirect direct;
  direct.set_output_map(ConvIgemmOutputMap{});
  STITCH_CHECK(direct.init(conv_shape, MatmulEpilogue::bias_relu, error));
  STITCH_CHECK(direct.run(a, a, a, y, stream, error));
  ConvDirect direct_transformed;  // an output transform applied as it stores
  STITCH_CHECK(direct_transformed.init<ScaleShift>(conv_shape, MatmulEpilogue::none, error));
  STITCH_CHECK(direct_transformed.run(a, a, nullptr, y, stream, error, detail::PlaneIdentity{},
                                      ScaleShift{a}));
  ConvDirectTf32 direct_tf32;  // one TF32 product on the tensor cores, transformed as it stores
  direct_tf32.set_output_map(ConvIgemmOutputMap{});
  STITCH_CHECK(direct_tf32.init<ScaleShift>(conv_shape, MatmulEpilogue::bias_gelu, error));
  STITCH_CHECK(direct_tf32.run(a, a, a, y, stream, error, detail::PlaneIdentity{}, ScaleShift{a}));
  ConvTransposeDirectTf32 transposed_direct_tf32;
  STITCH_CHECK(transposed_direct_tf32.init(transposed_shape, MatmulEpilogue::bias_relu, error));
  STITCH_CHECK(transposed_direct_tf32.prepare_weights(a, stream, error));
  STITCH_CHECK(transposed_direct_tf32.run(a, nullptr, a, y, stream, error));
  ConvIgemmTf32x3 igemm_transformed;  // both transforms: in the copy of x, and as it stores
  igemm_transformed.set_input_transform(true);
  STITCH_CHECK(igemm_transformed.init<ScaleShift>(conv_shape, MatmulEpilogue::none, error));
  STITCH_CHECK(
      igemm_transformed.run(a, a, nullptr, y, stream, error, ScaleShift{a}, ScaleShift{a}));
  ConvTransposeIgemmTf32x3 transposed_transformed;
  STITCH_CHECK(
      transposed_transformed.init<ScaleShift>(transposed_shape, MatmulEpilogue::none, error));
  STITCH_CHECK(transposed_transformed.run(a, a, nullptr, y, stream, error, detail::PlaneIdentity{},
                                          ScaleShift{a}));
  ConvIgemmTf32x3 channels_last;
  channels_last.set_input_channels_last(true);
  STITCH_CHECK(channels_last.init(conv_shape, MatmulEpilogue::none, error));
  ConvIgemmTf32x3 transformed;  // an input transform applied in the copy of x
  transformed.set_input_transform(true);
  STITCH_CHECK(transformed.init(conv_shape, MatmulEpilogue::none, error));
  const ScaleShift scale_shift{a};
  STITCH_CHECK(transformed.run(a, a, nullptr, y, stream, error, scale_shift));
  const float* transformed_x = nullptr;
  STITCH_CHECK(transformed.transformed_input(a, stream, scale_shift, transformed_x, error));
  bool strict_faster = false;  // strict FP32 timed against each split GEMM class
  STITCH_CHECK(
      time_gemm_against_strict(gemm3, true, mm, 16, 16, 16, 4, true, stream, error, strict_faster));
  STITCH_CHECK(
      time_gemm_against_strict(mm3, false, mm, 16, 16, 16, 4, false, stream, error, strict_faster));
  CudnnConv cudnn_conv;  // timed against each kernel class (kernels/conv_engine_timing.cuh)
  const ConvShape cudnn_shape;
  bool cudnn_faster = false;
  STITCH_CHECK(time_kernel_against_cudnn(conv3, true, cudnn_conv, cudnn_shape,
                                         MatmulEpilogue::bias_relu, {}, workspace, stream, error,
                                         cudnn_faster));
  STITCH_CHECK(time_kernel_against_cudnn(transformed, false, cudnn_conv, cudnn_shape,
                                         MatmulEpilogue::none, {true, false}, workspace, stream,
                                         error, cudnn_faster));
  STITCH_CHECK(time_kernel_against_cudnn(direct, false, cudnn_conv, cudnn_shape,
                                         MatmulEpilogue::bias_relu, {}, workspace, stream, error,
                                         cudnn_faster));
  STITCH_CHECK(time_kernel_against_cudnn(direct_transformed, false, cudnn_conv, cudnn_shape,
                                         MatmulEpilogue::none, {false, true}, workspace, stream,
                                         error, cudnn_faster));
  STITCH_CHECK(time_kernel_against_cudnn(transposed3, true, cudnn_conv, cudnn_shape,
                                         MatmulEpilogue::bias_gelu, {}, workspace, stream, error,
                                         cudnn_faster));
  STITCH_CHECK(time_kernel_against_cudnn(transposed_direct, true, cudnn_conv, cudnn_shape,
                                         MatmulEpilogue::bias_relu, {}, workspace, stream, error,
                                         cudnn_faster));

  AttentionShape attention;
  attention.queries = attention.keys = 4, attention.head_dim = attention.value_dim = 4;
  const AttentionOperand operand{a, {16, 16, 4, 1}};
  STITCH_CHECK_CUDA((prepare_attention<8>()));
  STITCH_CHECK_CUDA((launch_attention<8>(attention, operand, operand, operand, y,
                                         AttentionScoreIdentity{}, stream)));
  STITCH_CHECK_CUDA((prepare_attention<128>()));
  attention.causal = true, attention.norm = AttentionNorm::none;
  STITCH_CHECK_CUDA((launch_attention<128>(attention, operand, operand, operand, y,
                                           AttentionScoreIdentity{}, stream)));
  for (AttentionMath math :
       {AttentionMath::fp32_fma, AttentionMath::tf32x3, AttentionMath::tf32, AttentionMath::bf16}) {
    STITCH_CHECK_CUDA((prepare_attention_math<72>(math)));
    STITCH_CHECK_CUDA((launch_attention_math<72>(math, attention, operand, operand, operand, y,
                                                 AttentionScoreIdentity{}, stream)));
  }

  Arena arena;
  ArenaLayout layout;
  layout.take(100);
  STITCH_CHECK(arena.reserve(layout.total(), error));
  GraphCache graphs;
  const void* key[] = {a, y};
  return graphs.run(
      key, 2, stream,
      [&](cudaStream_t s) { return mm.run(a, a, nullptr, y, a, 1.0f, 0.0f, s, error); }, error);
}

}  // namespace

int (*volatile keep_forward)(const float*, float*, void*, cublasLtHandle_t, cudaStream_t,
                             std::string&) = forward;
