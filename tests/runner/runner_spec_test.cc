// slots.json parsing and the dtype / distribution tables of the runner (src/runner/spec.h).
#include "runner/spec.h"

#include <gtest/gtest.h>

namespace stitch::runner {
namespace {

std::string handle(char digit) {
  return std::string(128, digit);
}

std::string slots_json(const std::string& input_handle = handle('a')) {
  return fmt::format(R"({{
    "version": 1, "device": 0,
    "params": [{{"name": "w", "dtype": "float32", "shape": [4, 3], "strides": [3, 1],
                 "ipc_handle": "{0}", "offset_bytes": 512}}],
    "inputs": [{{"name": "x", "dtype": "float16", "shape": [2, 3], "strides": [1, 2],
                 "distribution": "rand"}},
               {{"name": "idx", "dtype": "int64", "shape": [5], "distribution": "randint:0:7"}}],
    "outputs": [{{"dtype": "float32", "shape": [2, 4]}}],
    "check_sets": [{{"inputs": [{{"ipc_handle": "{1}"}}, {{"ipc_handle": "{0}", "offset_bytes": 64}}],
                    "outputs": [{{"ipc_handle": "{0}"}}]}}],
    "spot_slots": [{{"inputs": [{{"ipc_handle": "{0}"}}, {{"ipc_handle": "{0}"}}],
                    "outputs": [{{"ipc_handle": "{0}"}}]}}]
  }})",
                     handle('0'), input_handle);
}

TEST(RunnerSpec, ParsesSlots) {
  auto spec = parse_slots(slots_json(), false, 0);
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  ASSERT_EQ(spec->params.size(), 1u);
  EXPECT_EQ(spec->param_refs[0].offset_bytes, 512u);
  EXPECT_EQ(spec->params[0].storage_bytes(), 48u);
  ASSERT_EQ(spec->inputs.size(), 2u);
  EXPECT_EQ(spec->inputs[0].dtype, STITCH_FLOAT16);
  EXPECT_FALSE(spec->inputs[0].contiguous());
  // Strides [1, 2] on [2, 3]: last element at 1*1 + 2*2 = 5, so 6 halves.
  EXPECT_EQ(spec->inputs[0].storage_bytes(), 12u);
  EXPECT_EQ(spec->inputs[0].distribution.kind, DistributionKind::uniform);
  EXPECT_EQ(spec->inputs[1].distribution.kind, DistributionKind::randint);
  EXPECT_EQ(spec->inputs[1].distribution.b, 7);
  // Strides default to row-major.
  EXPECT_EQ(spec->outputs[0].strides, (std::vector<int64_t>{4, 1}));
  ASSERT_EQ(spec->check_sets.size(), 1u);
  EXPECT_EQ(spec->check_sets[0].inputs[1].offset_bytes, 64u);
  EXPECT_EQ(spec->spot_slots.size(), 1u);
  stitch_tensor abi = spec->inputs[0].to_abi(nullptr);
  EXPECT_EQ(abi.rank, 2);
  EXPECT_EQ(abi.strides[1], 2);
}

// A state output (a buffer's value after the call, docs/verify-protocol.md) names its buffer; the
// runner leaves it out of the determinism check by that mark.
TEST(RunnerSpec, StateOutputsNameTheirBuffer) {
  auto spec = parse_slots(R"({"version": 1,
      "outputs": [{"dtype": "float32", "shape": [2, 4]},
                  {"dtype": "float32", "shape": [4], "state": "bn.running_mean"}]})",
                          true, 1);
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  ASSERT_EQ(spec->outputs.size(), 2u);
  EXPECT_EQ(spec->outputs[0].state, "");
  EXPECT_EQ(spec->outputs[1].state, "bn.running_mean");
}

TEST(RunnerSpec, SelfTestIgnoresHandlesAndMakesSets) {
  auto spec = parse_slots(slots_json("not-a-handle"), true, 3);
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_TRUE(spec->self_test);
  EXPECT_TRUE(spec->param_refs.empty());
  EXPECT_EQ(spec->check_sets.size(), 3u);
  EXPECT_TRUE(spec->spot_slots.empty());
}

TEST(RunnerSpec, RejectsBrokenSlots) {
  EXPECT_FALSE(parse_slots(slots_json("zz"), false, 0).ok());                   // short handle
  EXPECT_FALSE(parse_slots(slots_json(std::string(128, 'g')), false, 0).ok());  // not hex
  EXPECT_FALSE(parse_slots("{}", false, 0).ok());
  EXPECT_FALSE(parse_slots("not json", false, 0).ok());
  EXPECT_FALSE(
      parse_slots(R"({"version": 1, "outputs": [{"dtype": "complex64", "shape": [1]}]})", true, 1)
          .ok());
  EXPECT_FALSE(
      parse_slots(R"({"version": 1, "outputs": [{"dtype": "float32", "shape": [-1]}]})", true, 1)
          .ok());
  EXPECT_FALSE(parse_slots(R"({"version": 1, "device": "zero",
                               "outputs": [{"dtype": "float32", "shape": [1]}]})",
                           true, 1)
                   .ok());
  // A check set with the wrong number of inputs.
  auto spec = parse_slots(
      R"({"version": 1, "inputs": [{"dtype": "float32", "shape": [1]}],
          "outputs": [{"dtype": "float32", "shape": [1]}],
          "check_sets": [{"inputs": [], "outputs": []}]})",
      false, 0);
  EXPECT_FALSE(spec.ok());
}

TEST(RunnerSpec, Distributions) {
  EXPECT_EQ(parse_distribution("randn")->kind, DistributionKind::normal);
  EXPECT_EQ(parse_distribution("fixed")->kind, DistributionKind::fixed);
  EXPECT_EQ(parse_distribution("unknown")->kind, DistributionKind::fixed);
  auto bernoulli = parse_distribution("bernoulli:0.25");
  ASSERT_TRUE(bernoulli.ok());
  EXPECT_DOUBLE_EQ(bernoulli->a, 0.25);
  EXPECT_EQ(distribution_text(*bernoulli), "bernoulli:0.25");
  EXPECT_FALSE(parse_distribution("bernoulli:2").ok());
  EXPECT_FALSE(parse_distribution("randint:5:5").ok());
  EXPECT_FALSE(parse_distribution("randint:x").ok());
  EXPECT_FALSE(parse_distribution("gamma").ok());
}

TEST(RunnerSpec, DefaultSelfTestSpecMatchesScaleShiftRelu) {
  RunSpec spec = default_self_test_spec(2);
  ASSERT_EQ(spec.params.size(), 2u);
  EXPECT_EQ(spec.params[0].shape, std::vector<int64_t>{1024});
  ASSERT_EQ(spec.inputs.size(), 1u);
  EXPECT_EQ(spec.inputs[0].storage_bytes(), 4096u * 1024u * 4u);
  EXPECT_EQ(spec.outputs[0].shape, spec.inputs[0].shape);
  EXPECT_EQ(spec.check_sets.size(), 2u);
}

TEST(RunnerSpec, DTypeTable) {
  EXPECT_EQ(dtype_from_name("bfloat16")->size, 2);
  EXPECT_TRUE(dtype_from_name("float64")->floating);
  EXPECT_FALSE(dtype_from_name("bool")->floating);
  EXPECT_EQ(dtype_info(STITCH_INT8).name, "int8");
  EXPECT_FALSE(dtype_from_name("float8").has_value());
  TensorSpec empty{"e", STITCH_FLOAT32, {0, 4}, {4, 1}, {}};
  EXPECT_EQ(empty.storage_bytes(), 0u);
}

}  // namespace
}  // namespace stitch::runner
