// A tool the MCP server offers: its declaration (name, description, JSON Schema of its
// arguments) and what it does with arguments already checked against that schema. Tools know
// nothing of JSON-RPC; the server (server.h) turns their outputs into tools/call results.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace stitch::mcp {

struct ToolSpec {
  std::string name;
  std::string title;
  std::string description;
  nlohmann::json input_schema;  // a JSON Schema object (schema_check.h's subset)
};

// A tool's answer: structured data, a text for the model, and whether it is a tool execution
// error (MCP's isError: the model sees it and can correct itself; no JSON-RPC error).
struct ToolOutput {
  nlohmann::json structured;  // null: none
  std::string text;           // empty: the structured data's JSON is the text
  bool is_error = false;
};

inline ToolOutput tool_error(std::string message) {
  return ToolOutput{nullptr, std::move(message), true};
}

// What a running tool may tell its caller while it works (notifications/progress when the
// client asked for progress; otherwise nothing).
using ProgressReport = std::function<void(const std::string& message)>;

class Tool {
 public:
  virtual ~Tool() = default;
  virtual const ToolSpec& spec() const = 0;
  // `arguments` satisfies spec().input_schema. May run for minutes (a verification); it runs off
  // the thread that reads requests.
  virtual ToolOutput call(const nlohmann::json& arguments, const ProgressReport& progress) = 0;
};

// A tool made of its spec and a function (how the stitch tools and the tests' fakes are built).
class FunctionTool : public Tool {
 public:
  using Function = std::function<ToolOutput(const nlohmann::json&, const ProgressReport&)>;
  FunctionTool(ToolSpec spec, Function function)
      : spec_(std::move(spec)), function_(std::move(function)) {}
  const ToolSpec& spec() const override { return spec_; }
  ToolOutput call(const nlohmann::json& arguments, const ProgressReport& progress) override {
    return function_(arguments, progress);
  }

 private:
  ToolSpec spec_;
  Function function_;
};

}  // namespace stitch::mcp
