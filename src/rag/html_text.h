// The text of an HTML page for indexing: tags removed, script/style bodies dropped, the common
// entities decoded, block-level tags turned into line breaks (so chunks still cite lines of the
// extracted text, which is what the index stores and shows).
#pragma once

#include <string>
#include <string_view>

namespace stitch::rag {

std::string html_to_text(std::string_view html);

}  // namespace stitch::rag
