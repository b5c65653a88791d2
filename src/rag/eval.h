// The retrieval evaluation: questions with the source that answers them (eval_questions.json,
// embedded in the library), scored as recall@1, recall@5 and mean reciprocal rank. A hit answers a
// question when its path ends with the expected path and its text contains the expected
// identifier.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rag/search.h"
#include "util/result.h"

namespace stitch::rag {

struct EvalQuestion {
  int id = 0;
  std::string category;  // api, signature, enum, limit, attribute
  std::string question;
  std::string path;        // suffix of the expected source's path
  std::string identifier;  // must appear in the hit's text
};

// The reader of eval_questions.json (format "stitchcuda.rag_eval", version 1).
Result<std::vector<EvalQuestion>> parse_eval_set(const nlohmann::json& doc);
Result<std::vector<EvalQuestion>> read_eval_set(const std::filesystem::path& path);
// The set shipped with the tool (src/rag/eval_questions.json).
Result<std::vector<EvalQuestion>> builtin_eval_set();

bool answers(const DocHit& hit, const EvalQuestion& question);

struct EvalAnswer {
  int id = 0;
  int rank = 0;  // 1-based rank of the first right hit; 0 when none in the top k
  double ms = 0;
  std::string top;  // citation of the first hit
};

struct EvalReport {
  int questions = 0;
  int k = 5;
  double recall_at_1 = 0;
  double recall_at_k = 0;
  double mrr = 0;  // over the top k (a miss counts 0)
  double median_ms = 0;
  double max_ms = 0;
  std::vector<EvalAnswer> answers;
};

Result<EvalReport> run_eval(const DocIndex& index, const std::vector<EvalQuestion>& questions,
                            const SearchOptions& options);
nlohmann::json eval_report_to_json(const EvalReport& report);

}  // namespace stitch::rag
