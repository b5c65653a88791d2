// HTML to text (html_text.h).
#include "rag/html_text.h"

#include <array>
#include <utility>

#include "util/text.h"

namespace stitch::rag {
namespace {

constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kEntities = {{
    {"&lt;", "<"},
    {"&gt;", ">"},
    {"&amp;", "&"},
    {"&quot;", "\""},
    {"&#39;", "'"},
    {"&nbsp;", " "},
    {"&apos;", "'"},
}};

constexpr std::array<std::string_view, 14> kBlockTags = {
    "p", "br", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "table", "dt"};

// The lower-case name of the tag that starts at `tag` ("<pre class=..." → "pre", "</p>" → "p").
std::string tag_name(std::string_view tag) {
  size_t i = 1;
  if (i < tag.size() && tag[i] == '/') ++i;
  size_t start = i;
  while (i < tag.size() && std::isalnum(static_cast<unsigned char>(tag[i])))
    ++i;
  return lower(tag.substr(start, i - start));
}

bool is_block(const std::string& name) {
  for (std::string_view block : kBlockTags)
    if (name == block) return true;
  return false;
}

}  // namespace

std::string html_to_text(std::string_view html) {
  std::string out;
  size_t i = 0;
  while (i < html.size()) {
    char c = html[i];
    if (c == '<') {
      size_t close = html.find('>', i);
      if (close == std::string_view::npos) break;
      std::string name = tag_name(html.substr(i, close - i));
      bool opening = i + 1 < html.size() && html[i + 1] != '/';
      i = close + 1;
      if (opening && (name == "script" || name == "style")) {
        size_t end = lower(html.substr(i)).find("</" + name);
        i = end == std::string::npos ? html.size() : i + end;
      } else if (is_block(name) && (out.empty() || out.back() != '\n')) {
        out += '\n';
      }
    } else if (c == '&') {
      bool decoded = false;
      for (const auto& [entity, text] : kEntities)
        if (html.substr(i, entity.size()) == entity) {
          out += text;
          i += entity.size();
          decoded = true;
          break;
        }
      if (!decoded) out += html[i++];
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

}  // namespace stitch::rag
