// What an app function says while it works: one line at a time, to a sink the caller chooses (the
// CLI prints to stderr, bench's prepare writes a task's log, tests collect). Results are returned
// typed; progress is only for people watching.
#pragma once

#include <functional>
#include <string>

namespace stitch::app {

using ProgressSink = std::function<void(const std::string& line)>;

// Says `line` when there is a sink.
inline void say(const ProgressSink& sink, const std::string& line) {
  if (sink) sink(line);
}

}  // namespace stitch::app
