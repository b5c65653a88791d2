// The documentation index (src/rag) for the LLM roles: as a tool the model may call
// (search_cuda_docs, through llm/tool_loop.h) and as context fetched before the request for what
// the compile errors name. The search itself is a function the application passes in (over the
// index on disk; a fake in tests), so the roles work the same with or without an index.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "llm/tool_loop.h"
#include "rag/search.h"
#include "util/result.h"
#include "verify/feedback.h"

namespace stitch::agents {

using DocSearch = std::function<Result<std::vector<rag::DocHit>>(std::string_view query, int k)>;

inline constexpr std::string_view kDocToolName = "search_cuda_docs";

// search_cuda_docs {query, k (1-8, default 4)}: the hits with their citations and text.
llm::ChatTool documentation_tool(DocSearch search);

// Hits as a model reads them: "### path:lines" then the text in a code block.
std::string format_doc_hits(const std::vector<rag::DocHit>& hits);

// "## CUDA documentation for the errors" with the best few hits for what the compile errors name
// (their identifiers, else their message), each narrowed to the lines around the name and not
// repeating a declaration the feedback already carries; empty when there is nothing to add.
std::string prefetched_documentation(const DocSearch& search, const Feedback& feedback);

}  // namespace stitch::agents
