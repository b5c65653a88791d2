// CodeWriter: the emitter's text buffer. It owns indentation (so no emit_* function counts spaces)
// and hands out fresh local names ("v0", "v1", ...) per scope.
#pragma once

#include <string>
#include <string_view>

#include <fmt/format.h>

namespace stitch::codegen {

class CodeWriter {
 public:
  // One line at the current indentation ("" gives an empty line).
  template <class... Args>
  void line(fmt::format_string<Args...> format, Args&&... args) {
    std::string text = fmt::format(format, std::forward<Args>(args)...);
    if (!text.empty()) out_.append(static_cast<size_t>(depth_) * 2, ' ');
    out_ += text;
    out_ += '\n';
  }
  void blank() { out_ += '\n'; }
  // "header {" then indented lines until close() writes "}" + suffix.
  template <class... Args>
  void open(fmt::format_string<Args...> format, Args&&... args) {
    line(format, std::forward<Args>(args)...);
    ++depth_;
  }
  void close(std::string_view suffix = "") {
    --depth_;
    out_.append(static_cast<size_t>(depth_) * 2, ' ');
    out_ += '}';
    out_ += suffix;
    out_ += '\n';
  }
  // "}" + `continuation` (" else {") at the outer indentation; the lines after stay indented.
  void close_and_reopen(std::string_view continuation) {
    out_.append(static_cast<size_t>(depth_ - 1) * 2, ' ');
    out_ += '}';
    out_ += continuation;
    out_ += '\n';
  }
  std::string fresh(std::string_view prefix) { return fmt::format("{}{}", prefix, counter_++); }
  void reset_names() { counter_ = 0; }
  const std::string& text() const { return out_; }

 private:
  std::string out_;
  int depth_ = 0;
  int counter_ = 0;
};

}  // namespace stitch::codegen
