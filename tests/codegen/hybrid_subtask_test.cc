// Subtask-level coding without a GPU (issue 14, items 4 and 5): the Planner keeps an uncovered op
// as an opaque subtask, its signature, the subgraph it is checked alone against (and the task
// file around it), the stitching of an LLM fragment into the whole program and into the subtask's
// own program, and (nvcc) both programs compiling.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "build_program.h"
#include "codegen/program_emitter.h"
#include "codegen/subtask_signature.h"
#include "plan/plan_json.h"
#include "plan/planner.h"
#include "plan/subgraph.h"
#include "plan/subtasks.h"

namespace stitch::codegen {
namespace {

const std::string kFunction = "subtask_s01_opaque_logcumsumexp_32x128";

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ir::Graph hybrid_graph() {
  auto graph = ir::load_graph(std::string(STITCH_PLAN_DATA_DIR) + "/hybrid_logcumsumexp.graph.json");
  EXPECT_TRUE(graph.ok()) << graph.error().message;
  return *graph;
}

plan::Plan hybrid_plan() {
  plan::PlanOptions options;
  options.keep_uncovered = true;
  auto made = plan::make_plan(hybrid_graph(), options);
  EXPECT_TRUE(made.ok()) << made.error().message;
  return *made;
}

std::string fragment(const std::string& name) {
  return read_text(std::filesystem::path(STITCH_HYBRID_FRAGMENTS_DIR) / name);
}

TEST(HybridPlanTest, RefusedWithoutTheOptionKeptOpaqueWithIt) {
  auto refused = plan::make_plan(hybrid_graph(), {});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("aten.logcumsumexp.default"), std::string::npos);

  const plan::Plan plan = hybrid_plan();
  ASSERT_EQ(plan.subtasks.size(), 3u);
  EXPECT_EQ(plan::spec_kind_name(plan.subtasks[0].spec), "matmul");
  EXPECT_EQ(plan.subtasks[1].id, "s01_opaque_logcumsumexp_32x128");
  EXPECT_EQ(plan.subtasks[1].kernel, "llm");
  const auto* opaque = std::get_if<plan::OpaqueSpec>(&plan.subtasks[1].spec);
  ASSERT_NE(opaque, nullptr);
  EXPECT_EQ(plan.graph.nodes[opaque->node].op_name, "aten.logcumsumexp.default");
  EXPECT_EQ(opaque->reason, "logcumsumexp is not covered by the built-in Coder yet");
  ASSERT_EQ(opaque->inputs.size(), 1u);
  EXPECT_EQ(opaque->inputs[0].shape, (std::vector<int64_t>{32, 128}));
  ASSERT_EQ(opaque->stores.size(), 1u);
  // Nothing fuses across it: the GEMM's ReLU stays before it, the scale and tanh after it.
  EXPECT_EQ(plan::spec_kind_name(plan.subtasks[2].spec), "elementwise");

  // plan.json keeps it.
  auto reread = plan::parse_plan(plan::serialize_plan(plan));
  ASSERT_TRUE(reread.ok()) << reread.error().message;
  EXPECT_EQ(*reread, plan);
}

TEST(HybridPlanTest, SignatureStatesPointersShapesAndTheNode) {
  const plan::Plan plan = hybrid_plan();
  auto signature = subtask_signature(plan, plan.subtasks[1]);
  ASSERT_TRUE(signature.ok()) << signature.error().message;
  EXPECT_EQ(signature->declaration(),
            "cudaError_t " + kFunction + "(const float* in0, float* out0, cudaStream_t stream)");
  EXPECT_TRUE(signature->contiguous());
  const std::string text = describe_signature(plan, plan.subtasks[1], *signature);
  EXPECT_NE(text.find("| `in0` | relu (read only) | float32 | [32, 128] | [128, 1] |"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("aten.logcumsumexp.default(in0, 1)"), std::string::npos) << text;
  EXPECT_NE(text.find("`out0` receives the value `logcumsumexp`"), std::string::npos) << text;

  EXPECT_EQ(check_subtask_code(fragment("logcumsumexp_correct.cu"), *signature), "");
  EXPECT_NE(check_subtask_code("cudaError_t subtask_s01_other(const float* in0);", *signature), "");
  // A declaration without a body does not define it.
  EXPECT_NE(check_subtask_code(signature->declaration() + ";", *signature), "");
}

TEST(HybridPlanTest, WithoutAFragmentTheEmitterNamesTheOp) {
  auto program = emit_program(hybrid_plan());
  ASSERT_FALSE(program.ok());
  EXPECT_NE(program.error().message.find("aten.logcumsumexp.default"), std::string::npos);
  EXPECT_NE(program.error().message.find("--coder hybrid"), std::string::npos);
}

TEST(HybridPlanTest, StitchesTheFragmentIntoTheProgram) {
  EmitOptions options;
  options.cuda_graph = false;
  options.llm_subtasks["s01_opaque_logcumsumexp_32x128"] = {kFunction, fragment("logcumsumexp_correct.cu")};
  auto program = emit_program(hybrid_plan(), options);
  ASSERT_TRUE(program.ok()) << program.error().message;
  const std::string& source = program->source;
  const size_t include = source.find("#include <cuda_runtime.h>");
  const size_t kernel = source.find("__global__ void logcumsumexp_rows(");
  const size_t program_namespace = source.find("using namespace stitch::kernels;");
  ASSERT_NE(include, std::string::npos);
  ASSERT_NE(kernel, std::string::npos);
  EXPECT_LT(include, kernel);  // hoisted
  EXPECT_LT(kernel, program_namespace);
  EXPECT_NE(source.find("STITCH_CHECK_CUDA(" + kFunction + "("), std::string::npos);
  EXPECT_NE(source.find("false,  // cuda_graph"), std::string::npos);
}

TEST(HybridPlanTest, SubgraphAndItsTaskFile) {
  const plan::Plan plan = hybrid_plan();
  auto subgraph = plan::subtask_subgraph(plan, plan.subtasks[1]);
  ASSERT_TRUE(subgraph.ok()) << subgraph.error().message;
  ASSERT_EQ(subgraph->inputs.size(), 1u);
  EXPECT_EQ(subgraph->inputs[0].name, "in0");
  EXPECT_EQ(subgraph->inputs[0].type.shape, (std::vector<int64_t>{32, 128}));
  ASSERT_EQ(subgraph->nodes.size(), 1u);
  EXPECT_EQ(subgraph->nodes[0].op_name, "aten.logcumsumexp.default");
  EXPECT_TRUE(subgraph->params.empty());
  ASSERT_EQ(subgraph->outputs.size(), 1u);
  const std::string task = plan::subgraph_task_source(*subgraph, "subtask s01");
  EXPECT_NE(task.find("class Model(SubgraphModel)"), std::string::npos);
  EXPECT_NE(task.find("\"aten.logcumsumexp.default\""), std::string::npos);
  // The subgraph plans on its own into one opaque subtask with the same operands.
  plan::PlanOptions options;
  options.keep_uncovered = true;
  auto own = plan::make_plan(*subgraph, options);
  ASSERT_TRUE(own.ok()) << own.error().message;
  ASSERT_EQ(own->subtasks.size(), 1u);
  auto own_signature = subtask_signature(*own, own->subtasks[0]);
  auto signature = subtask_signature(plan, plan.subtasks[1]);
  ASSERT_TRUE(own_signature.ok() && signature.ok());
  EXPECT_TRUE(own_signature->same_operands(*signature));
}

// nvcc: the whole program and the subtask's own program, both with the fragment, compile.
TEST(HybridProgramTest, StitchedProgramsCompile) {
  const plan::Plan plan = hybrid_plan();
  EmitOptions options;
  options.cuda_graph = false;
  options.llm_subtasks["s01_opaque_logcumsumexp_32x128"] = {kFunction, fragment("logcumsumexp_correct.cu")};
  auto whole = emit_program(plan, options);
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  auto built = testing::build_program(*whole);
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_EQ(built->failure(), "");

  auto subgraph = plan::subtask_subgraph(plan, plan.subtasks[1]);
  ASSERT_TRUE(subgraph.ok());
  plan::PlanOptions plan_options;
  plan_options.keep_uncovered = true;
  auto own = plan::make_plan(*subgraph, plan_options);
  ASSERT_TRUE(own.ok());
  EmitOptions own_options = options;
  own_options.llm_subtasks = {{own->subtasks[0].id, {kFunction, fragment("logcumsumexp_correct.cu")}}};
  auto alone = emit_program(*own, own_options);
  ASSERT_TRUE(alone.ok()) << alone.error().message;
  auto built_alone = testing::build_program(*alone);
  ASSERT_TRUE(built_alone.ok()) << built_alone.error().message;
  EXPECT_EQ(built_alone->failure(), "");
}

}  // namespace
}  // namespace stitch::codegen
