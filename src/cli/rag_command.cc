// `stitchcuda rag index|query|eval`: the documentation index (docs/rag.md). Option parsing and
// printing only; the work is app/rag.h's.
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/rag.h"
#include "cli/commands.h"
#include "rag/text_terms.h"
#include "util/text.h"

namespace stitch::cli {
namespace {

struct RagArgs {
  std::string index;
  std::vector<std::string> paths;
  bool no_defaults = false;
  std::string query;
  int k = 5;
  bool json = false;
  std::string questions;
  double min_recall = 0;
  bool bm25_only = false;
  app::EmbeddingOptions embed;
};

void add_common(CLI::App* sub, RagArgs& args) {
  sub->add_option("--index", args.index,
                  "The index file (default $STITCH_RAG_INDEX, else "
                  "$XDG_CACHE_HOME/stitchcuda/rag.sqlite or ~/.cache/stitchcuda/rag.sqlite)");
  sub->add_option("--embed-url", args.embed.api_base,
                  "An OpenAI-compatible API base (http://host:port/v1) for /embeddings: adds "
                  "dense vectors (index) or hybrid ranking (query, eval)");
  sub->add_option("--embed-model", args.embed.model, "The embedding model's name");
  sub->add_option("--embed-key-env", args.embed.api_key_env,
                  "The environment variable holding the embeddings API key");
}

// The hit's lines that mention a query word, with their numbers (at most `limit`).
std::string excerpt(const rag::DocHit& hit, const std::string& query, int limit) {
  std::vector<std::string> words;
  for (std::string_view word : rag::identifiers(query))
    if (word.size() > 2) words.push_back(lower(word));
  std::string out;
  int shown = 0, number = hit.line_begin;
  for (std::string_view line : rag::lines_of(hit.text)) {
    std::string low = lower(line);
    for (const std::string& word : words)
      if (low.find(word) != std::string::npos) {
        out += fmt::format("    {:>6} | {}\n", number, trim(line));
        ++shown;
        break;
      }
    ++number;
    if (shown >= limit) break;
  }
  return out;
}

Result<CommandEnd> run_index(const RagArgs& args) {
  app::RagIndexOptions options;
  options.index = args.index;
  options.paths.assign(args.paths.begin(), args.paths.end());
  options.defaults = !args.no_defaults;
  options.embed = args.embed;
  options.progress = print_progress;
  STITCH_ASSIGN_OR_RETURN(app::RagIndexResult result, app::rag_index(options));
  fmt::print("{}: {} files, {} chunks, {} declarations, {} chunks with embeddings\n",
             result.index.string(), result.counts.files, result.counts.chunks,
             result.counts.declarations, result.counts.embedded_chunks);
  fmt::print(
      "this run: {} added, {} updated, {} unchanged, {} duplicates, {} removed in {:.1f} s\n",
      result.stats.added, result.stats.updated, result.stats.unchanged, result.stats.duplicates,
      result.stats.removed, result.stats.seconds);
  return CommandEnd::succeeded;
}

Result<CommandEnd> run_query(const RagArgs& args) {
  app::RagQueryOptions options;
  options.index = args.index;
  options.query = args.query;
  options.k = args.k;
  options.embed = args.embed;
  STITCH_ASSIGN_OR_RETURN(app::RagQueryResult result, app::rag_query(options));
  if (args.json) {
    nlohmann::json hits = nlohmann::json::array();
    for (const rag::DocHit& hit : result.hits)
      hits.push_back({{"citation", rag::citation(hit)},
                      {"path", hit.path},
                      {"line_begin", hit.line_begin},
                      {"line_end", hit.line_end},
                      {"score", hit.score},
                      {"text", hit.text}});
    fmt::print("{}\n", nlohmann::json{{"query", args.query},
                                      {"ms", result.ms},
                                      {"ranking", result.hybrid ? "hybrid" : "bm25"},
                                      {"hits", hits}}
                           .dump(1));
    return CommandEnd::succeeded;
  }
  for (size_t i = 0; i < result.hits.size(); ++i) {
    fmt::print("{}. {}  (score {:.3f})\n", i + 1, rag::citation(result.hits[i]),
               result.hits[i].score);
    fmt::print("{}", excerpt(result.hits[i], args.query, 4));
  }
  fmt::print("{} hits in {:.1f} ms ({})\n", result.hits.size(), result.ms,
             result.hybrid ? "hybrid" : "bm25");
  return CommandEnd::succeeded;
}

Result<CommandEnd> run_eval(const RagArgs& args) {
  app::RagEvalOptions options;
  options.index = args.index;
  options.questions = args.questions;
  options.k = args.k;
  options.embed = args.embed;
  options.declarations_first = !args.bm25_only;
  if (args.bm25_only) options.embed = {};
  STITCH_ASSIGN_OR_RETURN(rag::EvalReport report, app::rag_eval(options));
  if (args.json) {
    fmt::print("{}\n", rag::eval_report_to_json(report).dump(1));
  } else {
    for (const rag::EvalAnswer& answer : report.answers)
      if (answer.rank != 1)
        fmt::print("question {}: {} (top hit {})\n", answer.id,
                   answer.rank == 0 ? "missed" : fmt::format("rank {}", answer.rank), answer.top);
    fmt::print(
        "{} questions: recall@1 {:.3f}, recall@{} {:.3f}, MRR {:.3f}; query median {:.1f} "
        "ms, max {:.1f} ms\n",
        report.questions, report.recall_at_1, report.k, report.recall_at_k, report.mrr,
        report.median_ms, report.max_ms);
  }
  return report.recall_at_k >= args.min_recall ? CommandEnd::succeeded : CommandEnd::failed;
}

}  // namespace

CommandAction setup_rag(CLI::App& app) {
  auto args = std::make_shared<RagArgs>();
  app.require_subcommand(1);
  CLI::App* index = app.add_subcommand("index", "Index the CUDA headers, kernels/ and PATHS");
  add_common(index, *args);
  index->add_option("paths", args->paths, "Folders or files of HTML, Markdown, text or headers");
  index->add_flag("--no-defaults", args->no_defaults,
                  "Index only PATHS (not the toolkit headers and kernels/)");
  CLI::App* query = app.add_subcommand("query", "Search the index; hits cite path:lines");
  add_common(query, *args);
  query->add_option("query", args->query, "The words or identifiers to look up")->required();
  query->add_option("-k", args->k, "How many hits")->check(CLI::Range(1, 100));
  query->add_flag("--json", args->json, "One JSON document (hits with their text)");
  CLI::App* eval = app.add_subcommand("eval", "Recall@1/@k and MRR on the evaluation set");
  add_common(eval, *args);
  eval->add_option("--questions", args->questions,
                   "An evaluation set (default: the built-in one, src/rag/eval_questions.json)");
  eval->add_option("-k", args->k, "Hits per question")->check(CLI::Range(1, 100));
  eval->add_option("--min-recall", args->min_recall, "Fail (exit 1) below this recall@k");
  eval->add_flag("--json", args->json, "The report as JSON");
  eval->add_flag("--bm25-only", args->bm25_only,
                 "Rank by BM25 alone (no declarations first, no embeddings)");
  return [args, index, query, eval]() -> Result<CommandEnd> {
    if (index->parsed()) return run_index(*args);
    if (query->parsed()) return run_query(*args);
    if (eval->parsed()) return run_eval(*args);
    return make_error(ErrorKind::bad_input, "rag: say index, query or eval");
  };
}

}  // namespace stitch::cli
