#include "llm/sse_parser.h"

namespace stitch::llm {

std::vector<std::string> SseParser::feed(std::string_view bytes) {
  std::vector<std::string> events;
  pending_.append(bytes);
  size_t start = 0;
  for (size_t newline = pending_.find('\n', start); newline != std::string::npos;
       newline = pending_.find('\n', start)) {
    std::string_view line(pending_.data() + start, newline - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    take_line(line, events);
    start = newline + 1;
  }
  pending_.erase(0, start);
  return events;
}

std::vector<std::string> SseParser::finish() {
  std::vector<std::string> events;
  if (!pending_.empty()) {
    std::string line = std::move(pending_);
    pending_.clear();
    if (!line.empty() && line.back() == '\r') line.pop_back();
    take_line(line, events);
  }
  take_line("", events);  // dispatches what the missing blank line would have
  return events;
}

void SseParser::take_line(std::string_view line, std::vector<std::string>& events) {
  if (line.empty()) {
    if (has_data_) events.push_back(std::move(data_));
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;  // a comment (keep-alive)
  size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field != "data") return;  // event:, id:, retry: carry nothing a chat stream needs
  if (has_data_) data_ += '\n';
  data_.append(value);
  has_data_ = true;
}

}  // namespace stitch::llm
