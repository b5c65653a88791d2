// The retrieval evaluation (eval.h).
#include "rag/eval.h"

#include <algorithm>
#include <chrono>

#include "rag/embedded_files.h"
#include "util/fs.h"

namespace stitch::rag {
namespace {

using nlohmann::json;

Result<std::string> string_field(const json& item, const char* key, size_t index) {
  if (!item.contains(key) || !item[key].is_string() || item[key].get<std::string>().empty())
    return make_error(ErrorKind::bad_input, "question {}: '{}' is missing or not a string", index,
                      key);
  return item[key].get<std::string>();
}

}  // namespace

Result<std::vector<EvalQuestion>> parse_eval_set(const json& doc) {
  if (!doc.is_object() || doc.value("format", "") != "stitchcuda.rag_eval" ||
      doc.value("version", 0) != 1 || !doc.contains("questions") || !doc["questions"].is_array())
    return make_error(ErrorKind::bad_input, "not a version 1 stitchcuda.rag_eval document");
  std::vector<EvalQuestion> questions;
  for (size_t i = 0; i < doc["questions"].size(); ++i) {
    const json& item = doc["questions"][i];
    EvalQuestion q;
    q.id = item.value("id", static_cast<int>(i + 1));
    q.category = item.value("category", "");
    STITCH_ASSIGN_OR_RETURN(q.question, string_field(item, "question", i));
    STITCH_ASSIGN_OR_RETURN(q.path, string_field(item, "path", i));
    STITCH_ASSIGN_OR_RETURN(q.identifier, string_field(item, "identifier", i));
    questions.push_back(std::move(q));
  }
  return questions;
}

Result<std::vector<EvalQuestion>> read_eval_set(const std::filesystem::path& path) {
  STITCH_ASSIGN_OR_RETURN(json doc, read_json_file(path));
  auto parsed = parse_eval_set(doc);
  if (!parsed.ok()) return parsed.error().with_context(path.string());
  return parsed;
}

Result<std::vector<EvalQuestion>> builtin_eval_set() {
  for (const EmbeddedFile& file : embedded_files())
    if (file.name == "eval_questions.json") {
      json doc = json::parse(file.contents, nullptr, false);
      return parse_eval_set(doc);
    }
  return make_error("the built-in evaluation set is missing from this build");
}

bool answers(const DocHit& hit, const EvalQuestion& question) {
  std::string_view path = hit.path;
  bool path_matches =
      path.size() >= question.path.size() &&
      path.substr(path.size() - question.path.size()) == question.path &&
      (path.size() == question.path.size() || path[path.size() - question.path.size() - 1] == '/');
  return path_matches && hit.text.find(question.identifier) != std::string::npos;
}

Result<EvalReport> run_eval(const DocIndex& index, const std::vector<EvalQuestion>& questions,
                            const SearchOptions& options) {
  EvalReport report;
  report.questions = static_cast<int>(questions.size());
  report.k = options.k;
  std::vector<double> times;
  for (const EvalQuestion& question : questions) {
    auto started = std::chrono::steady_clock::now();
    STITCH_ASSIGN_OR_RETURN(std::vector<DocHit> hits, search(index, question.question, options));
    EvalAnswer answer;
    answer.id = question.id;
    answer.ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
    if (!hits.empty()) answer.top = citation(hits.front());
    for (size_t i = 0; i < hits.size() && answer.rank == 0; ++i)
      if (answers(hits[i], question)) answer.rank = static_cast<int>(i) + 1;
    if (answer.rank == 1) report.recall_at_1 += 1;
    if (answer.rank > 0) {
      report.recall_at_k += 1;
      report.mrr += 1.0 / answer.rank;
    }
    times.push_back(answer.ms);
    report.answers.push_back(std::move(answer));
  }
  if (!questions.empty()) {
    double n = static_cast<double>(questions.size());
    report.recall_at_1 /= n;
    report.recall_at_k /= n;
    report.mrr /= n;
    std::sort(times.begin(), times.end());
    report.median_ms = times[times.size() / 2];
    report.max_ms = times.back();
  }
  return report;
}

json eval_report_to_json(const EvalReport& report) {
  json answers = json::array();
  for (const EvalAnswer& a : report.answers)
    answers.push_back({{"id", a.id}, {"rank", a.rank}, {"ms", a.ms}, {"top", a.top}});
  return {
      {"questions", report.questions},     {"k", report.k},     {"recall_at_1", report.recall_at_1},
      {"recall_at_k", report.recall_at_k}, {"mrr", report.mrr}, {"median_ms", report.median_ms},
      {"max_ms", report.max_ms},           {"answers", answers}};
}

}  // namespace stitch::rag
