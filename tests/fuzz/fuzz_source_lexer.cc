// Fuzz target for the source lexer (verify/checks/source_lexer.h) the static checks read candidate
// sources through: any text lexes, every token lies inside the code, and every offset maps back to
// a line of the original text.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "verify/checks/source_lexer.h"

namespace {

[[noreturn]] void property_failed(const char* what) {
  std::fprintf(stderr, "fuzz_source_lexer: property violated: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const stitch::LexedSource lexed = stitch::lex_source(text);
  if (lexed.code.size() > text.size()) property_failed("code longer than the text");
  int lines = 1;
  for (char c : text)
    lines += c == '\n';
  for (const stitch::Token& token : lexed.tokens) {
    if (token.offset + token.length > lexed.code.size()) property_failed("token outside the code");
    (void)lexed.text(token);
    const int line = lexed.line_of(token.offset);
    if (line < 1 || line > lines) property_failed("token on no line of the text");
  }
  return 0;
}
