// The built-in refine policy (refine.h).
#include "agents/refine.h"

#include <algorithm>
#include <cctype>
#include <variant>

#include <fmt/format.h>

#include "agents/program_variant.h"
#include "plan/plan_json.h"

namespace stitch::agents {
namespace {

using nlohmann::json;

// The functor-name prefix the emitter gives a subtask's device code (program_emitter.cc
// functor_name): the id with every non-alphanumeric character replaced by '_'.
std::string functor_prefix(const std::string& id) {
  std::string name = id;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name + "_";
}

int64_t effective_tunable(const plan::Subtask& subtask, const json& variant, const std::string& key,
                          int64_t fallback) {
  if (variant.contains("subtasks") && variant["subtasks"].contains(subtask.id) &&
      variant["subtasks"][subtask.id].contains(key))
    return variant["subtasks"][subtask.id][key].get<int64_t>();
  auto found = subtask.tunables.find(key);
  return found != subtask.tunables.end() ? found->second : fallback;
}

json subtask_change(const std::string& id, const std::string& key, int64_t value) {
  return {{"subtasks", {{id, {{key, value}}}}}};
}

}  // namespace

std::map<std::string, double> subtask_time_shares(const plan::Plan& plan,
                                                  const std::optional<ProfileSummary>& profile) {
  std::map<std::string, double> time;
  double gemm_floor = 0;
  for (const auto& subtask : plan.subtasks)
    if (std::holds_alternative<plan::MatmulSpec>(subtask.spec)) gemm_floor += subtask.floor_us;
  if (profile && !profile->kernels.empty()) {
    double unmatched = 0;
    for (const auto& kernel : profile->kernels) {
      const plan::Subtask* owner = nullptr;
      for (const auto& subtask : plan.subtasks)
        if (kernel.name.find(functor_prefix(subtask.id)) != std::string::npos) owner = &subtask;
      if (owner != nullptr)
        time[owner->id] += kernel.duration_ms;
      else
        unmatched += kernel.duration_ms;
    }
    // Library kernels (cuBLASLt, the 3xTF32 GEMM) carry no subtask name: the GEMMs share them.
    for (const auto& subtask : plan.subtasks)
      if (std::holds_alternative<plan::MatmulSpec>(subtask.spec) && gemm_floor > 0)
        time[subtask.id] += unmatched * subtask.floor_us / gemm_floor;
  } else {
    for (const auto& subtask : plan.subtasks)
      time[subtask.id] = subtask.floor_us;
  }
  double total = 0;
  for (const auto& [id, t] : time)
    total += t;
  if (total > 0)
    for (auto& [id, t] : time)
      t /= total;
  return time;
}

std::vector<RefineCandidate> refine_candidates(const plan::Plan& plan, const json& best_variant,
                                               const std::optional<ProfileSummary>& profile,
                                               int hot_subtasks) {
  const auto shares = subtask_time_shares(plan, profile);
  std::vector<const plan::Subtask*> order;
  for (const auto& subtask : plan.subtasks)
    if (!subtask.at_init) order.push_back(&subtask);
  std::stable_sort(order.begin(), order.end(), [&](const auto* a, const auto* b) {
    auto share = [&](const plan::Subtask* s) {
      auto found = shares.find(s->id);
      return found == shares.end() ? 0.0 : found->second;
    };
    return share(a) > share(b);
  });
  if (static_cast<int>(order.size()) > hot_subtasks) order.resize(hot_subtasks);

  std::vector<RefineCandidate> candidates;
  bool any_gemm = false;
  for (const plan::Subtask* subtask : order) {
    const double share = shares.count(subtask->id) ? shares.at(subtask->id) : 0.0;
    const std::string where = fmt::format("{} ({:.0f}% of the time)", subtask->id, share * 100);
    const bool gemm = std::holds_alternative<plan::MatmulSpec>(subtask->spec);
    any_gemm = any_gemm || gemm;
    if (gemm && effective_tunable(*subtask, best_variant, "split_tf32x3", 0) == 1)
      candidates.push_back({where + ": strict FP32 GEMM instead of 3xTF32",
                            subtask_change(subtask->id, "split_tf32x3", 0)});
    // The fused attention on the fp32 track: its FP32 FMA kernel kept if the clock favours it.
    if (std::holds_alternative<plan::AttentionSpec>(subtask->spec) &&
        effective_tunable(*subtask, best_variant, "split_tf32x3", 0) == 1)
      candidates.push_back({where + ": FP32 FMA attention instead of 3xTF32",
                            subtask_change(subtask->id, "split_tf32x3", 0)});
    const bool has_elementwise_launch =
        std::holds_alternative<plan::ElementwiseSpec>(subtask->spec) ||
        (gemm && std::get<plan::MatmulSpec>(subtask->spec).epilogue.has_value());
    if (has_elementwise_launch) {
      const int64_t block = effective_tunable(*subtask, best_variant, "block", 256);
      for (int64_t other : {128, 512})
        if (other != block && tunable_may_be_overridden(*subtask, "block", other))
          candidates.push_back({fmt::format("{}: block {}", where, other),
                                subtask_change(subtask->id, "block", other)});
    }
  }
  if (any_gemm && best_variant.value("tune_iterations", 5) < 20)
    candidates.push_back({"cuBLASLt algorithm choice: 20 timed iterations per candidate",
                          {{"tune_iterations", 20}}});
  const bool graph = best_variant.value("cuda_graph", true);
  candidates.push_back({graph ? "CUDA graph off (launch subtasks directly)" : "CUDA graph on",
                        {{"cuda_graph", !graph}}});
  return candidates;
}

Result<std::vector<RefineCandidate>> BuiltinRefinePolicy::candidates(
    const fs::path& plan_file, const json& best_variant,
    const std::optional<ProfileSummary>& profile) {
  STITCH_ASSIGN_OR_RETURN(plan::Plan plan, plan::load_plan(plan_file.string()));
  return refine_candidates(plan, best_variant, profile);
}

}  // namespace stitch::agents
