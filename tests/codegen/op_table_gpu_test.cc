// The differential table, GPU mode: the per-op rows (op_table.h) as one graph — each row one node
// with its own inputs and output — and each fusion row (fusion_table.h) as its own graph, planned
// (plan::make_plan), emitted (emit_program), built by nvcc and run through the runner's program
// loader on the device; every output is compared with the row's reference within its tolerance.
// Skips with a visible message without a CUDA device or nvcc.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "codegen/program_emitter.h"
#include "fusion_table.h"
#include "op_table.h"
#include "plan/planner.h"
#include "build_program.h"
#include "runner/program_library.h"

namespace stitch::codegen::testing {
namespace {

namespace fs = std::filesystem;

bool has_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

stitch_tensor device_tensor(void* data, const ir::TensorType& type) {
  stitch_tensor t{};
  t.data = data;
  t.dtype = static_cast<stitch_dtype>(type.dtype);
  t.rank = static_cast<int32_t>(type.rank());
  for (int d = 0; d < t.rank; ++d) {
    t.shape[d] = type.shape[d];
    t.strides[d] = type.strides[d];
  }
  return t;
}

// An output element as a double: float32, bool (one byte) or int64.
double element(const std::vector<char>& bytes, ir::DType dtype, int64_t e) {
  switch (dtype) {
    case ir::DType::boolean: return bytes[e] ? 1.0 : 0.0;
    case ir::DType::int64: {
      int64_t v;
      std::memcpy(&v, bytes.data() + e * 8, 8);
      return static_cast<double>(v);
    }
    default: {
      float v;
      std::memcpy(&v, bytes.data() + e * 4, 4);
      return v;
    }
  }
}

// Device buffers freed at scope exit.
struct DeviceBuffers {
  std::vector<void*> buffers;
  ~DeviceBuffers() {
    for (void* p : buffers) cudaFree(p);
  }
  void* upload(const std::vector<double>& values) {
    std::vector<float> host(values.begin(), values.end());
    void* data = nullptr;
    if (cudaMalloc(&data, std::max<size_t>(host.size() * 4, 4)) != cudaSuccess) return nullptr;
    buffers.push_back(data);
    if (cudaMemcpy(data, host.data(), host.size() * 4, cudaMemcpyHostToDevice) != cudaSuccess)
      return nullptr;
    return data;
  }
  void* zeros(size_t bytes) {
    void* data = nullptr;
    if (cudaMalloc(&data, std::max<size_t>(bytes, 8)) != cudaSuccess) return nullptr;
    buffers.push_back(data);
    return cudaMemset(data, 0, bytes) == cudaSuccess ? data : nullptr;
  }
};

// plan → emit → nvcc → load → init(params) → forward(inputs) on the device; the graph's outputs.
Result<Values> run_on_device(const ir::Graph& graph, const Values& inputs, const Values& params) {
  STITCH_ASSIGN_OR_RETURN(plan::Plan plan, plan::make_plan(graph, plan::PlanOptions{}));
  STITCH_ASSIGN_OR_RETURN(EmittedProgram program, emit_program(plan));
  STITCH_ASSIGN_OR_RETURN(BuiltProgram built, build_program(program));
  if (!built.build.ok) return make_error("{}", built.failure());
  STITCH_ASSIGN_OR_RETURN(runner::ProgramLibrary library, runner::load_program(built.library));

  DeviceBuffers device;
  std::vector<stitch_tensor> param_tensors, input_tensors, output_tensors;
  for (size_t p = 0; p < graph.params.size(); ++p)
    param_tensors.push_back(device_tensor(device.upload(params.at(p)), graph.params[p].type));
  for (size_t i = 0; i < graph.inputs.size(); ++i)
    input_tensors.push_back(device_tensor(device.upload(inputs.at(i)), graph.inputs[i].type));
  for (const ir::ValueRef& ref : graph.outputs)
    output_tensors.push_back(device_tensor(device.zeros(graph.type_of(ref).bytes()),
                                           graph.type_of(ref)));
  void* state = nullptr;
  if (library.init(param_tensors.data(), static_cast<int>(param_tensors.size()), &state) != 0)
    return make_error("stitch_init: {}", library.error_text(nullptr));
  const int status = library.forward(state, input_tensors.data(),
                                     static_cast<int>(input_tensors.size()), output_tensors.data(),
                                     static_cast<int>(output_tensors.size()), nullptr);
  if (status != 0 || cudaDeviceSynchronize() != cudaSuccess) {
    const std::string text = library.error_text(state);
    library.destroy(state);
    return make_error("stitch_forward: {}", text);
  }
  Values outputs;
  for (size_t o = 0; o < graph.outputs.size(); ++o) {
    const ir::TensorType& type = graph.type_of(graph.outputs[o]);
    std::vector<char> bytes(type.bytes());
    cudaMemcpy(bytes.data(), output_tensors[o].data, bytes.size(), cudaMemcpyDeviceToHost);
    outputs.emplace_back();
    for (int64_t e = 0; e < type.numel(); ++e) outputs.back().push_back(element(bytes, type.dtype, e));
  }
  library.destroy(state);
  return outputs;
}

#define REQUIRE_DEVICE_AND_NVCC()                                                        \
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device: the differential table's GPU mode is skipped"; \
  if (!locate_nvcc().ok()) GTEST_SKIP() << "no nvcc: the differential table's GPU mode is skipped"

TEST(OpTableGpu, PlannedEmittedProgramsMatchTheReferences) {
  REQUIRE_DEVICE_AND_NVCC();
  const std::vector<OpCase> cases = planned_cases();
  Values inputs;
  for (const OpCase& c : cases)
    for (size_t k = 0; k < c.domains.size(); ++k) {
      const std::vector<float> values = domain_values(c.domains[k], static_cast<int>(k));
      inputs.emplace_back(values.begin(), values.end());
    }
  auto outputs = run_on_device(op_table_graph(cases), inputs, {});
  ASSERT_TRUE(outputs.ok()) << outputs.error().message;
  ASSERT_EQ(outputs->size(), cases.size());
  size_t input = 0;
  for (size_t r = 0; r < cases.size(); ++r) {
    const OpCase& c = cases[r];
    const size_t first = input;
    input += c.domains.size();
    for (int64_t e = 0; e < kCaseValues; ++e) {
      std::vector<double> x;
      for (size_t k = 0; k < c.domains.size(); ++k) x.push_back(inputs[first + k][e]);
      double reference = c.reference(x);
      if (c.out_dtype == ir::DType::int64) reference = std::trunc(reference);
      const double actual = (*outputs)[r][e];
      EXPECT_TRUE(within(static_cast<float>(actual), reference, c.tolerance))
          << c.name << " element " << e << ": " << actual << ", reference " << reference;
    }
  }
}

TEST(FusionTableGpu, EachRuleRowMatchesItsReference) {
  REQUIRE_DEVICE_AND_NVCC();
  for (const FusionCase& c : fusion_cases()) {
    SCOPED_TRACE(c.name + " (" + c.rule + ")");
    Values inputs, params, all;
    int index = 0;
    for (const ir::Input& in : c.graph.inputs) inputs.push_back(fusion_values(in.type.numel(), index++));
    for (const ir::Param& p : c.graph.params) params.push_back(fusion_values(p.type.numel(), index++));
    all = inputs;
    all.insert(all.end(), params.begin(), params.end());
    auto outputs = run_on_device(c.graph, inputs, params);
    ASSERT_TRUE(outputs.ok()) << outputs.error().message;
    const Values expected = c.reference(all);
    ASSERT_EQ(outputs->size(), expected.size());
    for (size_t o = 0; o < expected.size(); ++o) {
      ASSERT_EQ((*outputs)[o].size(), expected[o].size()) << "output " << o;
      for (size_t e = 0; e < expected[o].size(); ++e)
        EXPECT_TRUE(within(static_cast<float>((*outputs)[o][e]), expected[o][e], c.tolerance))
            << "output " << o << " element " << e << ": " << (*outputs)[o][e] << ", reference "
            << expected[o][e];
    }
  }
}

}  // namespace
}  // namespace stitch::codegen::testing
