// The reward breakdown's JSON (format "stitchcuda.reward", version 1), its writer and reader side
// by side:
//   reward, compiled, correct, hacked, verdict, baseline, speedup (null: not timed), rule_reward,
//   shaping, clipped, notes [..],
//   rubric {judge, notes [..], scores {dimension: {score, evidence [..]}}}
#include <fmt/format.h>

#include "reward/reward.h"

namespace stitch::reward {
namespace {

using nlohmann::json;

template <typename T>
Result<T> field(const json& doc, const char* name) {
  if (!doc.is_object() || !doc.contains(name))
    return make_error(ErrorKind::bad_input, "reward.json: missing '{}'", name);
  try {
    return doc.at(name).get<T>();
  } catch (const json::exception&) {
    return make_error(ErrorKind::bad_input, "reward.json: '{}' has the wrong type", name);
  }
}

Result<RubricScores> rubric_from_json(const json& doc) {
  RubricScores rubric;
  STITCH_ASSIGN_OR_RETURN(std::string judge, field<std::string>(doc, "judge"));
  std::optional<JudgeKind> kind = enum_from_name<JudgeKind>(judge);
  if (!kind) return make_error(ErrorKind::bad_input, "reward.json: unknown judge '{}'", judge);
  rubric.judge = *kind;
  STITCH_ASSIGN_OR_RETURN(rubric.notes, field<std::vector<std::string>>(doc, "notes"));
  STITCH_ASSIGN_OR_RETURN(json scores, field<json>(doc, "scores"));
  for (size_t d = 0; d < kDimensionCount; ++d) {
    STITCH_ASSIGN_OR_RETURN(json one, field<json>(scores, kDimensionNames[d].data()));
    DimensionScore& score = rubric.dimensions[d];
    score.dimension = Dimension(d);
    STITCH_ASSIGN_OR_RETURN(score.score, field<double>(one, "score"));
    STITCH_ASSIGN_OR_RETURN(score.evidence, field<std::vector<std::string>>(one, "evidence"));
  }
  return rubric;
}

}  // namespace

json breakdown_to_json(const RewardBreakdown& b) {
  json scores = json::object();
  for (const DimensionScore& score : b.rubric.dimensions)
    scores[std::string(enum_name(score.dimension))] = {{"score", score.score},
                                                       {"evidence", score.evidence}};
  return {{"format", "stitchcuda.reward"},
          {"version", 1},
          {"reward", b.reward},
          {"compiled", b.compiled},
          {"correct", b.correct},
          {"hacked", b.hacked},
          {"verdict", b.verdict},
          {"baseline", b.baseline},
          {"speedup", b.speedup ? json(*b.speedup) : json(nullptr)},
          {"rule_reward", b.rule_reward},
          {"shaping", b.shaping},
          {"clipped", b.clipped},
          {"notes", b.notes},
          {"rubric",
           {{"judge", enum_name(b.rubric.judge)}, {"notes", b.rubric.notes}, {"scores", scores}}}};
}

Result<RewardBreakdown> breakdown_from_json(const json& doc) {
  STITCH_ASSIGN_OR_RETURN(std::string format, field<std::string>(doc, "format"));
  STITCH_ASSIGN_OR_RETURN(int version, field<int>(doc, "version"));
  if (format != "stitchcuda.reward" || version != 1)
    return make_error(ErrorKind::bad_input, "reward.json: not a version 1 stitchcuda.reward");
  RewardBreakdown b;
  STITCH_ASSIGN_OR_RETURN(b.reward, field<double>(doc, "reward"));
  STITCH_ASSIGN_OR_RETURN(b.compiled, field<bool>(doc, "compiled"));
  STITCH_ASSIGN_OR_RETURN(b.correct, field<bool>(doc, "correct"));
  STITCH_ASSIGN_OR_RETURN(b.hacked, field<bool>(doc, "hacked"));
  STITCH_ASSIGN_OR_RETURN(b.verdict, field<std::string>(doc, "verdict"));
  STITCH_ASSIGN_OR_RETURN(b.baseline, field<std::string>(doc, "baseline"));
  STITCH_ASSIGN_OR_RETURN(json speedup, field<json>(doc, "speedup"));
  if (!speedup.is_null()) {
    if (!speedup.is_number()) return make_error(ErrorKind::bad_input, "reward.json: bad speedup");
    b.speedup = speedup.get<double>();
  }
  STITCH_ASSIGN_OR_RETURN(b.rule_reward, field<double>(doc, "rule_reward"));
  STITCH_ASSIGN_OR_RETURN(b.shaping, field<double>(doc, "shaping"));
  STITCH_ASSIGN_OR_RETURN(b.clipped, field<bool>(doc, "clipped"));
  STITCH_ASSIGN_OR_RETURN(b.notes, field<std::vector<std::string>>(doc, "notes"));
  STITCH_ASSIGN_OR_RETURN(json rubric, field<json>(doc, "rubric"));
  STITCH_ASSIGN_OR_RETURN(b.rubric, rubric_from_json(rubric));
  return b;
}

}  // namespace stitch::reward
