// Search terms and token counts (text_terms.h).
#include "rag/text_terms.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <set>

#include "util/text.h"

namespace stitch::rag {
namespace {

bool is_word(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}
bool is_upper(char c) {
  return std::isupper(static_cast<unsigned char>(c)) != 0;
}
bool is_lower(char c) {
  return std::islower(static_cast<unsigned char>(c)) != 0;
}
bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

constexpr std::array<std::string_view, 34> kStopWords = {
    "a",    "an",    "and",   "are", "as",  "at",   "be",    "by",   "do",  "does", "for", "from",
    "how",  "in",    "is",    "it",  "of",  "on",   "or",    "that", "the", "this", "to",  "what",
    "when", "where", "which", "who", "why", "with", "there", "its",  "can", "i"};

bool is_stop_word(std::string_view word) {
  return std::find(kStopWords.begin(), kStopWords.end(), word) != kStopWords.end();
}

// Where a new part starts inside a run of letters and digits.
bool part_boundary(std::string_view word, size_t i) {
  char prev = word[i - 1], here = word[i];
  if (is_lower(prev) && is_upper(here)) return true;  // matmulDesc
  if (is_digit(prev) != is_digit(here)) return true;  // fp16, 16F
  if (is_upper(prev) && is_upper(here) && i + 1 < word.size() && is_lower(word[i + 1]))
    return true;  // HTTPServer
  return false;
}

}  // namespace

int count_tokens(std::string_view text) {
  int count = 0;
  size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (std::isspace(c)) {
      ++i;
    } else if (std::isalnum(c)) {
      while (i < text.size() && std::isalnum(static_cast<unsigned char>(text[i])))
        ++i;
      ++count;
    } else {
      ++i;
      ++count;
    }
  }
  return count;
}

std::vector<std::string> split_identifier(std::string_view identifier) {
  std::vector<std::string> parts;
  size_t start = 0;
  auto flush = [&](size_t end) {
    if (end > start) parts.push_back(lower(identifier.substr(start, end - start)));
  };
  for (size_t i = 0; i < identifier.size(); ++i) {
    if (identifier[i] == '_') {
      flush(i);
      start = i + 1;
    } else if (i > start && part_boundary(identifier, i)) {
      flush(i);
      start = i;
    }
  }
  flush(identifier.size());
  if (parts.empty()) parts.push_back(lower(identifier));
  return parts;
}

std::vector<std::string_view> identifiers(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    if (!is_word(text[i])) {
      ++i;
      continue;
    }
    size_t start = i;
    while (i < text.size() && is_word(text[i]))
      ++i;
    out.push_back(text.substr(start, i - start));
  }
  return out;
}

std::string split_parts_text(std::string_view text) {
  std::string out;
  for (std::string_view word : identifiers(text)) {
    std::vector<std::string> parts = split_identifier(word);
    if (parts.size() < 2) continue;
    for (const std::string& part : parts) {
      out += part;
      out += ' ';
    }
  }
  return out;
}

std::string fts_query(std::string_view query) {
  std::set<std::string> seen;
  std::string out;
  auto add = [&](std::string term) {
    if (term.empty() || is_stop_word(term) || !seen.insert(term).second) return;
    if (!out.empty()) out += " OR ";
    out += '"' + term + '"';
  };
  for (std::string_view word : identifiers(query)) {
    std::string whole = lower(word);
    // Leading/trailing underscores are not part of a name anyone searches for.
    while (!whole.empty() && whole.front() == '_')
      whole.erase(whole.begin());
    while (!whole.empty() && whole.back() == '_')
      whole.pop_back();
    add(whole);
    std::vector<std::string> parts = split_identifier(word);
    if (parts.size() > 1)
      for (std::string& part : parts)
        add(std::move(part));
  }
  return out;
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

int edit_distance(std::string_view a, std::string_view b, int limit) {
  int diff = static_cast<int>(a.size()) - static_cast<int>(b.size());
  if (std::abs(diff) > limit) return limit + 1;
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    int best = row[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      int above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
      best = std::min(best, row[j]);
    }
    if (best > limit) return limit + 1;
  }
  return std::min(row[b.size()], limit + 1);
}

}  // namespace stitch::rag
