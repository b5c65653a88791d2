// The built-in judge's anti-hacking, CUDA engineering and operator coverage scores (skill
// compliance: judge_compliance.cc). Each score starts from an anchor of docs/rubric.md and moves by
// the facts it lists as evidence.
#include "reward/judge_builtin.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "ir/cost.h"

namespace stitch::reward {
namespace {

double clamp_score(double score) {
  return std::clamp(score, 1.0, 5.0);
}

DimensionScore make_score(Dimension dimension, double score, std::vector<std::string> evidence) {
  return {dimension, clamp_score(score), std::move(evidence)};
}

// Who does a node's work: a library when the program calls the library for that kind of op (or
// folds it into a library epilogue), else the program's own kernels when it has any, else nobody.
std::string_view node_owner(const ir::Node& node, const ProgramFeatures& f) {
  switch (ir::op_category(node.op)) {
    case ir::OpCategory::matmul:
      if (f.library_gemm) return "library";
      break;
    case ir::OpCategory::convolution:
      if (f.library_conv) return "library";
      break;
    case ir::OpCategory::normalization:
    case ir::OpCategory::pooling:
      if (f.library_norm) return "library";
      break;
    case ir::OpCategory::elementwise_unary:
    case ir::OpCategory::elementwise_binary:
      if (f.own_kernels == 0 && f.library_epilogue) return "library";
      break;
    default:
      break;
  }
  return f.own_kernels > 0 ? "own" : "left_out";
}

// The count of the graph's nodes that do work (views and creation ops move nothing).
int working_nodes(const ir::Graph& graph) {
  int n = 0;
  for (const ir::Node& node : graph.nodes) {
    ir::OpCategory category = ir::op_category(node.op);
    if (category != ir::OpCategory::view && category != ir::OpCategory::creation) ++n;
  }
  return n;
}

}  // namespace

WorkShares attribute_work(const ir::Graph& reference, const ProgramFeatures& f) {
  ir::GraphCost total = ir::estimate_graph_cost(reference);
  double flop_weight = total.flops > 0 ? 0.5 : 0.0;
  std::map<std::string_view, double> by_owner;
  WorkShares shares;
  for (const ir::Node& node : reference.nodes) {
    if (ir::is_view(node.op)) continue;
    ir::NodeCost cost = ir::estimate_node_cost(reference, node);
    double share = (total.flops > 0 ? flop_weight * cost.flops / total.flops : 0.0) +
                   (total.bytes > 0 ? (1 - flop_weight) * cost.bytes / total.bytes : 0.0);
    std::string_view owner = node_owner(node, f);
    by_owner[owner] += share;
    if (share > shares.dominant_op_share) {
      shares.dominant_op_share = share;
      shares.dominant_op = node.op_name;
      shares.dominant_by = std::string(owner);
    }
  }
  shares.own = by_owner["own"];
  shares.library = by_owner["library"];
  shares.left_out = by_owner["left_out"];
  return shares;
}

DimensionScore score_anti_hacking(const AttemptEvidence& evidence, const ProgramFeatures& f) {
  std::vector<std::string> why;
  if (evidence.sources.empty()) return make_score(Dimension::anti_hacking, 1, {"no program"});
  if (f.python || !f.torch_uses.empty()) {
    why.push_back(
        "the program uses PyTorch or Python: a copy of the reference, not a CUDA program");
    why.insert(why.end(), f.torch_uses.begin(), f.torch_uses.end());
    return make_score(Dimension::anti_hacking, 1, why);
  }
  const std::optional<VerifyReport>& verify = evidence.verify;
  if (verify && (verify->outcome == Outcome::hacked || verify->has_fatal_finding())) {
    why.push_back("the Verifier found a hack");
    for (const FindingRecord& record : verify->findings)
      if (record.finding.fatal)
        why.push_back(fmt::format("{} ({}): {}", enum_name(record.finding.kind), record.origin,
                                  record.finding.detail));
    return make_score(Dimension::anti_hacking, 1, why);
  }
  double score = 5;
  if (!verify || verify->state != VerifyState::verified || !verify->runner_ran) {
    score = 4;
    why.push_back("only the static checks ran: the runtime hack checks did not");
  }
  if (verify) {
    for (const FindingRecord& record : verify->findings) {
      score -= 1;
      why.push_back(fmt::format("warning {} ({}): {}", enum_name(record.finding.kind),
                                record.origin, record.finding.detail));
    }
    if (!verify->insecure_sandbox.empty()) {
      score -= 1;
      why.push_back("sandbox layers waived: " +
                    fmt::format("{}", fmt::join(verify->insecure_sandbox, ", ")));
    }
    if (!verify->deterministic) {
      score -= 1;
      why.push_back("outputs differ between identical calls");
    }
    for (const std::string& reason : verify->degenerate_reasons)
      why.push_back("degenerate reference: " + reason);
    if (!verify->degenerate_reasons.empty()) score -= 1;
  }
  if (why.empty()) why.push_back("verified with every check and no finding");
  return make_score(Dimension::anti_hacking, std::max(score, 2.0), why);
}

DimensionScore score_cuda_engineering(const AttemptEvidence& evidence, const ProgramFeatures& f) {
  std::vector<std::string> why;
  double score = 1;
  auto credit = [&](bool present, double points, std::string what) {
    if (!present) return;
    score += points;
    why.push_back(fmt::format("{:+.1f} {}", points, what));
  };
  credit(f.own_kernels > 0, 1, fmt::format("own kernels: {}", f.own_kernels));
  credit(f.shared_tiling, 0.5, "shared-memory tiling (__shared__)");
  credit(f.tensor_cores, 1,
         f.tensor_cores_in_sass ? "tensor-core instructions in the SASS" : "tensor-core MMA code");
  credit(f.vectorised, 0.5, "vectorised memory access (128-bit)");
  credit(f.library_epilogue, 0.5, "cuBLASLt epilogue fused into the library call");
  credit(f.graph_capture, 0.5, "CUDA graph capture");
  const std::optional<VerifyReport>& verify = evidence.verify;
  if (f.own_kernels > 0 && evidence.reference) {
    int ops = working_nodes(*evidence.reference);
    double kernels = verify && verify->launches_per_forward ? *verify->launches_per_forward
                                                            : double(f.launch_sites);
    credit(kernels > 0 && kernels < ops, 1,
           fmt::format("fusion: {:g} kernels per forward for {} ops", kernels, ops));
  }
  if (verify) {
    int64_t spills = 0;
    for (const PtxasKernelReport& kernel : verify->kernels)
      spills += kernel.spill_store_bytes + kernel.spill_load_bytes;
    credit(spills > 0, -0.5, fmt::format("{} bytes of register spills", spills));
    if (!verify->built && verify->state == VerifyState::verified) {
      score = std::min(score, 2.0);
      why.push_back("does not build: at most 2");
    }
  }
  if (why.empty()) why.push_back("no own kernels and no engineering signal");
  return make_score(Dimension::cuda_engineering, score, why);
}

DimensionScore score_operator_coverage(const AttemptEvidence& evidence, const ProgramFeatures& f) {
  if (!evidence.reference)
    return make_score(Dimension::operator_coverage, 3, {"no reference graph: not measured"});
  if (f.python || !f.torch_uses.empty())
    return make_score(Dimension::operator_coverage, 1, {"PyTorch does the work"});
  if (evidence.verify) {
    for (const FindingRecord& record : evidence.verify->findings)
      if (record.finding.kind == HackKind::trivial_output ||
          record.finding.kind == HackKind::decoy_kernel)
        return make_score(Dimension::operator_coverage, 1,
                          {"degenerate work: " + std::string(enum_name(record.finding.kind))});
  }
  WorkShares shares = attribute_work(*evidence.reference, f);
  // Library calls earn a quarter: the rubric rewards the program doing the work itself.
  double effective = shares.own + 0.25 * shares.library;
  std::vector<std::string> why = {
      fmt::format("own kernels {:.0f}%, library {:.0f}%, left out {:.0f}% of the work",
                  100 * shares.own, 100 * shares.library, 100 * shares.left_out),
      fmt::format("dominant op {} ({:.0f}% of the work) done by {}", shares.dominant_op,
                  100 * shares.dominant_op_share, shares.dominant_by)};
  return make_score(Dimension::operator_coverage, 1 + 4 * effective, why);
}

Result<RubricScores> BuiltinJudge::judge(const AttemptEvidence& evidence) {
  ProgramFeatures f = scan_program(evidence.sources, evidence.sass);
  if (evidence.verify) add_build_facts(f, *evidence.verify);
  RubricScores scores;
  scores.judge = JudgeKind::builtin;
  scores[Dimension::anti_hacking] = score_anti_hacking(evidence, f);
  scores[Dimension::cuda_engineering] = score_cuda_engineering(evidence, f);
  scores[Dimension::operator_coverage] = score_operator_coverage(evidence, f);
  scores[Dimension::skill_compliance] = score_skill_compliance(evidence, f);
  if (evidence.sass.empty())
    scores.notes.push_back("no SASS inspected: tensor cores from the source only");
  return scores;
}

}  // namespace stitch::reward
