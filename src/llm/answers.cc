// The LLM roles' JSON answers: schemas and readers (answers.h). Each record's fields are listed
// once (util/json_fields.h) and both the reader and the writer walk that list.
#include "llm/answers.h"

#include <algorithm>
#include <tuple>

#include "util/json_fields.h"

namespace stitch::llm {
namespace {

using nlohmann::json;

constexpr std::tuple kBufferFields = {
    JsonField{"name", &PlannedBuffer::name}, JsonField{"shape", &PlannedBuffer::shape},
    JsonField{"dtype", &PlannedBuffer::dtype}, JsonField{"reuses", &PlannedBuffer::reuses}};

constexpr std::tuple kKernelFields = {JsonField{"id", &PlannedKernel::id},
                                      JsonField{"operations", &PlannedKernel::operations},
                                      JsonField{"computes", &PlannedKernel::computes},
                                      JsonField{"inputs", &PlannedKernel::inputs},
                                      JsonField{"outputs", &PlannedKernel::outputs},
                                      JsonField{"implementation", &PlannedKernel::implementation},
                                      JsonField{"parallelization", &PlannedKernel::parallelization},
                                      JsonField{"bound", &PlannedKernel::bound}};

constexpr std::tuple kPlanFields = {
    JsonField{"summary", &LlmPlan::summary},
    JsonField{"fusion_decisions", &LlmPlan::fusion_decisions},
    JsonField{"execution_order", &LlmPlan::execution_order},
    JsonField{"weight_preparation", &LlmPlan::weight_preparation},
    JsonField{"optimizations", &LlmPlan::optimizations},
    JsonField{"host_strategy", &LlmPlan::host_strategy},
    JsonField{"changes_from_previous", &LlmPlan::changes_from_previous}};

constexpr std::tuple kAnalysisFields = {JsonField{"bottleneck", &VerifierAnalysis::bottleneck},
                                        JsonField{"kernel", &VerifierAnalysis::kernel},
                                        JsonField{"evidence", &VerifierAnalysis::evidence},
                                        JsonField{"optimisation", &VerifierAnalysis::optimisation},
                                        JsonField{"change", &VerifierAnalysis::change},
                                        JsonField{"next_step", &VerifierAnalysis::next_step}};

json string_array() {
  return {{"type", "array"}, {"items", {{"type", "string"}}}};
}
json text() {
  return {{"type", "string"}};
}

json enum_schema(auto names) {
  json values = json::array();
  for (std::string_view name : names)
    values.push_back(name);
  return {{"type", "string"}, {"enum", values}};
}

template <class Record, class Fields>
Result<Record> read_record(const json& doc, const Fields& fields) {
  if (!doc.is_object()) return make_error(ErrorKind::bad_input, "expected a JSON object");
  Record record;
  STITCH_TRY(read_fields(doc, record, fields, FieldPresence::required));
  return record;
}

}  // namespace

const json& llm_plan_schema() {
  static const json schema = [] {
    const json buffer = {
        {"type", "object"},
        {"properties",
         {{"name", text()},
          {"shape", {{"type", "array"}, {"items", {{"type", "integer"}}}}},
          {"dtype", text()},
          {"reuses",
           {{"type", "string"}, {"description", "buffer it shares memory with, or \"\""}}}}},
        {"required", {"name", "shape", "dtype", "reuses"}}};
    const json kernel = {
        {"type", "object"},
        {"properties",
         {{"id", text()},
          {"operations", string_array()},
          {"computes", text()},
          {"inputs", string_array()},
          {"outputs", string_array()},
          {"implementation",
           {{"type", "string"}, {"description", "own kernel, cublasLt, cublas or cudnn"}}},
          {"parallelization", text()},
          {"bound", {{"type", "string"}, {"enum", {"memory", "compute", "latency"}}}}}},
        {"required",
         {"id", "operations", "computes", "inputs", "outputs", "implementation", "parallelization",
          "bound"}}};
    return json{
        {"type", "object"},
        {"properties",
         {{"summary", text()},
          {"fusion_decisions", string_array()},
          {"intermediate_buffers", {{"type", "array"}, {"items", buffer}}},
          {"kernels", {{"type", "array"}, {"items", kernel}, {"minItems", 1}}},
          {"execution_order", string_array()},
          {"weight_preparation", string_array()},
          {"optimizations", string_array()},
          {"host_strategy", text()},
          {"changes_from_previous",
           {{"type", "string"}, {"description", "replans only, else \"\""}}}}},
        {"required",
         {"summary", "fusion_decisions", "intermediate_buffers", "kernels", "execution_order",
          "weight_preparation", "optimizations", "host_strategy", "changes_from_previous"}}};
  }();
  return schema;
}

Result<LlmPlan> llm_plan_from_json(const json& doc) {
  STITCH_ASSIGN_OR_RETURN(LlmPlan plan, read_record<LlmPlan>(doc, kPlanFields));
  STITCH_ASSIGN_OR_RETURN(plan.intermediate_buffers,
                          read_array<PlannedBuffer>(doc, "intermediate_buffers", [](const json& b) {
                            return read_record<PlannedBuffer>(b, kBufferFields);
                          }));
  STITCH_ASSIGN_OR_RETURN(plan.kernels,
                          read_array<PlannedKernel>(doc, "kernels", [](const json& k) {
                            return read_record<PlannedKernel>(k, kKernelFields);
                          }));
  if (plan.kernels.empty())
    return make_error(ErrorKind::bad_input, "kernels: the plan defines no kernel");
  for (const std::string& id : plan.execution_order)
    if (std::none_of(plan.kernels.begin(), plan.kernels.end(),
                     [&](const PlannedKernel& kernel) { return kernel.id == id; }))
      return make_error(ErrorKind::bad_input, "execution_order: '{}' is not a kernel of the plan",
                        id);
  return plan;
}

json llm_plan_to_json(const LlmPlan& plan) {
  json doc = fields_to_json(plan, kPlanFields);
  doc["intermediate_buffers"] = json_array(plan.intermediate_buffers, [](const PlannedBuffer& b) {
    return fields_to_json(b, kBufferFields);
  });
  doc["kernels"] = json_array(
      plan.kernels, [](const PlannedKernel& k) { return fields_to_json(k, kKernelFields); });
  return doc;
}

const json& verifier_analysis_schema() {
  static const json schema = {
      {"type", "object"},
      {"properties",
       {{"bottleneck", enum_schema(kBottleneckNames)},
        {"kernel", {{"type", "string"}, {"description", "the kernel or host step that costs"}}},
        {"evidence",
         {{"type", "array"},
          {"items", {{"type", "string"}, {"description", "a metric with its measured value"}}},
          {"minItems", 1}}},
        {"optimisation", text()},
        {"change", {{"type", "string"}, {"description", "what the Coder edits, concretely"}}},
        {"next_step", enum_schema(kNextStepNames)}}},
      {"required", {"bottleneck", "kernel", "evidence", "optimisation", "change", "next_step"}}};
  return schema;
}

Result<VerifierAnalysis> verifier_analysis_from_json(const json& doc) {
  STITCH_ASSIGN_OR_RETURN(VerifierAnalysis analysis,
                          read_record<VerifierAnalysis>(doc, kAnalysisFields));
  if (analysis.evidence.empty())
    return make_error(ErrorKind::bad_input, "evidence: give at least one measured metric");
  return analysis;
}

}  // namespace stitch::llm
