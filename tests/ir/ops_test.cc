// The op and dtype tables, tensor-type helpers and argument accessors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "ir/ir.h"

namespace stitch::ir {
namespace {

TEST(OpTable, NamesRoundTripAndAreUnique) {
  std::set<std::string_view> names;
  for (int i = 0; i < kOpCount - 1; ++i) {
    const Op op = static_cast<Op>(i);
    const std::string_view name = op_name(op);
    EXPECT_TRUE(name.starts_with("aten.")) << name;
    EXPECT_TRUE(names.insert(name).second) << "duplicate " << name;
    ASSERT_TRUE(op_from_name(name).has_value()) << name;
    EXPECT_EQ(*op_from_name(name), op) << name;
  }
  EXPECT_EQ(op_name(Op::opaque), "opaque");
  EXPECT_FALSE(op_from_name("opaque").has_value());
  EXPECT_FALSE(op_from_name("aten.relu").has_value());
  EXPECT_FALSE(op_from_name("").has_value());
}

TEST(OpTable, KnownNamesAndCategories) {
  EXPECT_EQ(op_from_name("aten.addmm.default"), Op::addmm);
  EXPECT_EQ(op_from_name("aten.add.Tensor"), Op::add_tensor);
  EXPECT_EQ(op_from_name("aten.lstm.input"), Op::lstm_input);
  EXPECT_EQ(op_category(Op::relu), OpCategory::elementwise_unary);
  EXPECT_EQ(op_category(Op::mul_tensor), OpCategory::elementwise_binary);
  EXPECT_EQ(op_category(Op::where_self), OpCategory::elementwise_ternary);
  EXPECT_EQ(op_category(Op::sum_dim_intlist), OpCategory::reduction);
  EXPECT_EQ(op_category(Op::convolution), OpCategory::convolution);
  EXPECT_EQ(op_category(Op::scaled_dot_product_attention), OpCategory::attention);
  EXPECT_EQ(op_category(Op::gru_input), OpCategory::recurrent);
  EXPECT_EQ(op_category(Op::opaque), OpCategory::other);
  EXPECT_TRUE(is_view(Op::permute));
  EXPECT_FALSE(is_view(Op::clone));
  EXPECT_EQ(op_category_name(OpCategory::normalization), "normalization");
}

// Every op that KernelBench levels 1-3 use after capture (torch 2.11) must be known, not opaque.
TEST(OpTable, CoversKernelBenchOps) {
  constexpr std::string_view kKernelBenchOps[] = {
      "aten._assert_tensor_metadata.default",
      "aten._log_softmax.default",
      "aten._native_batch_norm_legit.no_stats",
      "aten._native_batch_norm_legit_functional.default",
      "aten._softmax.default",
      "aten.abs.default",
      "aten.add.Scalar",
      "aten.add.Tensor",
      "aten.addmm.default",
      "aten.alias.default",
      "aten.amax.default",
      "aten.arange.start_step",
      "aten.argmax.default",
      "aten.as_strided.default",
      "aten.avg_pool2d.default",
      "aten.avg_pool3d.default",
      "aten.bmm.default",
      "aten.cat.default",
      "aten.clamp.Tensor",
      "aten.clamp.default",
      "aten.clone.default",
      "aten.convolution.default",
      "aten.copy.default",
      "aten.cumprod.default",
      "aten.cumsum.default",
      "aten.div.Tensor",
      "aten.elu.default",
      "aten.eq.Scalar",
      "aten.exp.default",
      "aten.expand.default",
      "aten.flip.default",
      "aten.fmod.Scalar",
      "aten.full_like.default",
      "aten.ge.Scalar",
      "aten.gelu.default",
      "aten.gru.input",
      "aten.gt.Scalar",
      "aten.hardtanh.default",
      "aten.index.Tensor",
      "aten.index_select.default",
      "aten.isnan.default",
      "aten.le.Scalar",
      "aten.leaky_relu.default",
      "aten.linalg_vector_norm.default",
      "aten.log.default",
      "aten.log1p.default",
      "aten.lstm.input",
      "aten.lt.Scalar",
      "aten.max.dim",
      "aten.max_pool2d_with_indices.default",
      "aten.max_pool3d_with_indices.default",
      "aten.mean.default",
      "aten.mean.dim",
      "aten.min.dim",
      "aten.minimum.default",
      "aten.mm.default",
      "aten.mul.Tensor",
      "aten.native_dropout.default",
      "aten.native_group_norm.default",
      "aten.native_layer_norm.default",
      "aten.permute.default",
      "aten.pow.Tensor_Scalar",
      "aten.randn.default",
      "aten.relu.default",
      "aten.scalar_tensor.default",
      "aten.scaled_dot_product_attention.default",
      "aten.select.int",
      "aten.sigmoid.default",
      "aten.slice.Tensor",
      "aten.split_with_sizes.default",
      "aten.squeeze.dims",
      "aten.sub.Tensor",
      "aten.sum.dim_IntList",
      "aten.tanh.default",
      "aten.unfold.default",
      "aten.unsqueeze.default",
      "aten.view.default",
      "aten.where.self",
  };
  EXPECT_EQ(std::size(kKernelBenchOps), 78u);
  for (std::string_view name : kKernelBenchOps)
    EXPECT_TRUE(op_from_name(name).has_value()) << name;
}

TEST(OpTable, ShortNames) {
  EXPECT_EQ(short_op_name("aten.relu.default"), "relu");
  EXPECT_EQ(short_op_name("aten.add.Tensor"), "add.Tensor");
  EXPECT_EQ(short_op_name("mylib.custom"), "mylib.custom");
}

TEST(DTypes, NamesSizesAndKinds) {
  for (int i = 0; i < kDTypeCount; ++i) {
    const DType dtype = static_cast<DType>(i);
    EXPECT_EQ(dtype_from_name(dtype_name(dtype)), dtype);
    EXPECT_GT(dtype_size(dtype), 0);
  }
  EXPECT_EQ(dtype_name(DType::boolean), "bool");
  EXPECT_EQ(dtype_size(DType::bfloat16), 2);
  EXPECT_EQ(dtype_size(DType::int64), 8);
  EXPECT_TRUE(is_floating(DType::bfloat16));
  EXPECT_FALSE(is_floating(DType::int32));
  EXPECT_TRUE(is_integral(DType::uint8));
  EXPECT_FALSE(is_integral(DType::boolean));
  EXPECT_FALSE(dtype_from_name("float").has_value());
  EXPECT_FALSE(dtype_from_name("complex64").has_value());
}

TEST(TensorTypes, NumelBytesAndContiguity) {
  TensorType type{{2, 3, 4}, DType::float16, {12, 4, 1}};
  EXPECT_EQ(type.numel(), 24);
  EXPECT_EQ(type.bytes(), 48);
  EXPECT_EQ(type.rank(), 3);
  EXPECT_TRUE(type.is_contiguous());
  EXPECT_EQ(contiguous_strides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(contiguous_strides({}), std::vector<int64_t>{});

  TensorType transposed{{3, 2}, DType::float32, {1, 3}};
  EXPECT_FALSE(transposed.is_contiguous());
  // A size-1 dim's stride does not matter.
  TensorType unit{{1, 5}, DType::float32, {99, 1}};
  EXPECT_TRUE(unit.is_contiguous());

  TensorType scalar{{}, DType::int64, {}};
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(format_tensor_type(type), "[2, 3, 4] float16");
}

TEST(TensorTypes, HugeShapesSaturateInsteadOfOverflowing) {
  const int64_t big = int64_t{1} << 40;
  EXPECT_FALSE(checked_numel({big, big}).has_value());
  EXPECT_FALSE(checked_numel({-1, 4}).has_value());
  EXPECT_EQ(checked_numel({4096, 393216}), int64_t{4096} * 393216);
  TensorType type{{big, big}, DType::float32, {big, 1}};
  EXPECT_EQ(type.numel(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(type.bytes(), std::numeric_limits<int64_t>::max());
}

TEST(Args, Accessors) {
  EXPECT_EQ(Arg{int64_t{3}}.as_int(), 3);
  EXPECT_EQ(Arg{true}.as_int(), 1);
  EXPECT_EQ(Arg{2.5}.as_double(), 2.5);
  EXPECT_EQ(Arg{int64_t{2}}.as_double(), 2.0);
  EXPECT_FALSE(Arg{2.5}.as_int().has_value());
  EXPECT_EQ(Arg{false}.as_bool(), false);
  EXPECT_FALSE(Arg{int64_t{0}}.as_bool().has_value());
  EXPECT_TRUE(Arg{}.is_none());
  EXPECT_EQ(*Arg{std::string("tanh")}.as_string(), "tanh");
  EXPECT_EQ(Arg{DType::int8}.as_dtype(), DType::int8);

  Arg list{ArgList{Arg{int64_t{1}}, Arg{int64_t{2}}}};
  EXPECT_TRUE(list.is_list());
  EXPECT_EQ(list.as_int_list(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(Arg{int64_t{7}}.as_int_list(), (std::vector<int64_t>{7}));
  Arg mixed{ArgList{Arg{int64_t{1}}, Arg{1.5}}};
  EXPECT_FALSE(mixed.as_int_list().has_value());

  Arg ref{ValueRef{ValueRef::Kind::node, 2, 1}};
  ASSERT_NE(ref.ref(), nullptr);
  EXPECT_EQ(ref.ref()->out, 1);
}

TEST(Args, EqualityIsStructuralForFloats) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(Arg{nan}, Arg{-nan});
  EXPECT_EQ(Arg{1.0}, Arg{1.0});
  EXPECT_NE(Arg{0.0}, Arg{-0.0});
  EXPECT_NE(Arg{1.0}, Arg{int64_t{1}});  // a float is not an int
  EXPECT_EQ(Arg{ArgList{Arg{nan}}}, Arg{ArgList{Arg{nan}}});
}

TEST(Nodes, KwargAndArgOrKwarg) {
  Node node;
  node.args = {Arg{int64_t{1}}};
  node.kwargs = {{"alpha", Arg{2.0}}};
  ASSERT_NE(node.kwarg("alpha"), nullptr);
  EXPECT_EQ(node.kwarg("alpha")->as_double(), 2.0);
  EXPECT_EQ(node.kwarg("beta"), nullptr);
  EXPECT_EQ(node.arg_or_kwarg(0, "self")->as_int(), 1);
  EXPECT_EQ(node.arg_or_kwarg(1, "alpha")->as_double(), 2.0);
  EXPECT_EQ(node.arg_or_kwarg(2, "beta"), nullptr);
}

}  // namespace
}  // namespace stitch::ir
