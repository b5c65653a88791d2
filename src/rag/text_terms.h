// How text becomes search terms and how its length is counted (docs/rag.md "Chunks and tokens").
//
// Token count (for chunk sizes): an approximation, not a model's tokenizer. A token is a run of
// ASCII letters and digits, or one other non-space character; "cublasLtMatmul(handle, 0);" is 7
// tokens. Against BPE tokenizers it overcounts runs of punctuation and undercounts long
// identifiers (not measured against any particular model's tokenizer).
//
// Search terms: identifiers are kept whole (FTS5 treats '_' as part of a word, so
// CUDNN_ATTR_OPERATION_MATMUL_ADESC is one term) and also split into their camelCase and
// underscore parts (cublasLtMatmulDescCreate → cublas lt matmul desc create), which the index
// stores in a second column. A query is split the same way, so "matmul desc create" finds
// cublasLtMatmulDescCreate and "cublasLtMatmul" matches the name exactly.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stitch::rag {

// Tokens of `text` by the approximation above.
int count_tokens(std::string_view text);

// The camelCase / underscore / letter-digit parts of one identifier, lower case; a single part
// (the identifier itself) when it does not split. "cublasLtMatmul" → cublas, lt, matmul;
// "CUDNN_DATA_FLOAT" → cudnn, data, float; "HTTPServer" → http, server; "fp16" → fp, 16.
std::vector<std::string> split_identifier(std::string_view identifier);

// The identifiers (runs of [A-Za-z0-9_]) of `text`, in order.
std::vector<std::string_view> identifiers(std::string_view text);

// The parts of every identifier in `text` that splits into more than one part, space-separated:
// the index's second column.
std::string split_parts_text(std::string_view text);

// The FTS5 query for a user's words: each word whole and its parts (lower case, deduplicated, a few
// English stop words dropped), quoted and OR-ed. Empty when nothing searchable is left.
std::string fts_query(std::string_view query);

// The lines of `text` without their '\n' (a last line without one counts).
std::vector<std::string_view> lines_of(std::string_view text);

// Levenshtein distance, giving up (returning limit + 1) once it must exceed `limit`.
int edit_distance(std::string_view a, std::string_view b, int limit);

}  // namespace stitch::rag
