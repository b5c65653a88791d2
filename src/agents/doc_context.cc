// The documentation index for the LLM roles (doc_context.h).
#include "agents/doc_context.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "verify/declaration_notes.h"

namespace stitch::agents {
namespace {

constexpr int kDefaultToolHits = 4;
constexpr int kMaxToolHits = 8;
constexpr int kPrefetchedHits = 3;
constexpr int kFocusRadius = 20;  // lines each side of the line that names the query

bool overlaps(const rag::DocHit& hit, const DeclarationNote& note) {
  return hit.path == note.path && hit.line_begin <= note.line_end &&
         note.line_begin <= hit.line_end;
}

}  // namespace

std::string format_doc_hits(const std::vector<rag::DocHit>& hits) {
  std::string text;
  for (const rag::DocHit& hit : hits)
    text += fmt::format("### {}\n\n```\n{}```\n\n", rag::citation(hit), hit.text);
  return text;
}

llm::ChatTool documentation_tool(DocSearch search) {
  llm::ChatTool tool;
  tool.spec.name = std::string(kDocToolName);
  tool.spec.description =
      "Search this machine's CUDA toolkit headers (runtime, cuBLAS/cuBLASLt, cuDNN, cuRAND, "
      "CUPTI) and the project's kernel library for API names, signatures, enum values and "
      "attributes. Returns the best passages with their path:lines.";
  tool.spec.parameters = {
      {"type", "object"},
      {"properties",
       {{"query", {{"type", "string"}, {"description", "API names or words to look up"}}},
        {"k", {{"type", "integer"}, {"minimum", 1}, {"maximum", kMaxToolHits}}}}},
      {"required", {"query"}}};
  tool.run = [search = std::move(search)](const nlohmann::json& args) -> Result<std::string> {
    if (!args.contains("query") || !args["query"].is_string())
      return make_error("'query' must be a string");
    int k = kDefaultToolHits;
    if (args.contains("k") && args["k"].is_number_integer())
      k = std::clamp(args["k"].get<int>(), 1, kMaxToolHits);
    const std::string query = args["query"].get<std::string>();
    STITCH_ASSIGN_OR_RETURN(std::vector<rag::DocHit> hits, search(query, k));
    if (hits.empty()) return std::string("no passage matches");
    for (rag::DocHit& hit : hits)
      hit = rag::focus_hit(hit, query, kFocusRadius * 2);
    return format_doc_hits(hits);
  };
  return tool;
}

std::string prefetched_documentation(const DocSearch& search, const Feedback& feedback) {
  std::vector<rag::DocHit> chosen;
  std::set<std::string> seen;
  for (const Diagnostic& error : feedback.compile_errors) {
    std::string query;
    for (const ErrorIdentifier& id : error_identifiers(error))
      query += id.name + " ";
    if (query.empty()) query = error.message;
    auto hits = search(query, 2);
    if (!hits.ok()) continue;  // a query with no searchable word, an index gone: nothing to add
    for (const rag::DocHit& hit : *hits) {
      rag::DocHit focused = rag::focus_hit(hit, query, kFocusRadius);
      bool known =
          std::any_of(feedback.declarations.begin(), feedback.declarations.end(),
                      [&](const DeclarationNote& note) { return overlaps(focused, note); });
      if (known || !seen.insert(rag::citation(focused)).second) continue;
      chosen.push_back(std::move(focused));
      if (static_cast<int>(chosen.size()) >= kPrefetchedHits) break;
    }
    if (static_cast<int>(chosen.size()) >= kPrefetchedHits) break;
  }
  if (chosen.empty()) return "";
  return "\n\n## CUDA documentation for the errors (from this machine's headers)\n\n" +
         format_doc_hits(chosen);
}

}  // namespace stitch::agents
