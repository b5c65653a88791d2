// Splits a text/event-stream (Server-Sent Events) into the data of its events, fed in whatever
// pieces the network delivers. Pure: no I/O, so its edge cases (an event split across reads,
// CRLF line ends, comments, several data lines) are unit-tested byte by byte.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stitch::llm {

class SseParser {
 public:
  // The data of every event these bytes complete, in order (multi-line data joined with '\n').
  std::vector<std::string> feed(std::string_view bytes);
  // At the end of the stream: an event whose blank line never came (its data, if any).
  std::vector<std::string> finish();

 private:
  void take_line(std::string_view line, std::vector<std::string>& events);

  std::string pending_;  // bytes after the last line end
  std::string data_;
  bool has_data_ = false;
};

}  // namespace stitch::llm
