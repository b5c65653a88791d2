// `stitchcuda mcp`: the Model Context Protocol server for coding agents on stdio (src/mcp/, the
// real work wired by app/mcp_ops.h); `--skill` prints the skill file built into the binary.
// Protocol messages alone go to stdout; progress and logs to stderr.
#include <fmt/format.h>

#include "app/mcp_ops.h"
#include "cli/build_cache_option.h"
#include "cli/commands.h"
#include "cli/common_options.h"
#include "mcp/skill.h"
#include "mcp/stdio_server.h"
#include "run/run_dir.h"

namespace stitch::cli {
namespace {

struct McpCommandOptions {
  bool skill = false;
  std::string record_dir;
  std::string docs_index;
  std::string runs_dir = "runs";
  std::vector<std::string> insecure_sandbox;
  BuildCacheOption build_cache;
};

Result<CommandEnd> run_mcp(const McpCommandOptions& options) {
  if (options.skill) {
    fmt::print("{}", mcp::skill_text());
    return CommandEnd::succeeded;
  }
  app::McpOpsOptions ops_options;
  ops_options.runs_dir = options.runs_dir;
  ops_options.build_cache_dir = options.build_cache.resolved();
  ops_options.insecure_sandbox = options.insecure_sandbox;
  ops_options.log = print_progress;
  app::SystemStitchOps ops(ops_options);
  // query_docs: the documentation index (src/rag); without one it answers a tool error naming
  // `stitchcuda rag index`.
  app::RagDocsSearch docs(options.docs_index);

  mcp::StdioServeOptions serve;
  serve.info.version = "0.1.0";
  serve.info.instructions = std::string(mcp::server_instructions());
  serve.record_dir = options.record_dir.empty()
                         ? std::filesystem::path(options.runs_dir) /
                               ("mcp-" + run::format_timestamp(std::chrono::system_clock::now()))
                         : std::filesystem::path(options.record_dir);
  STITCH_TRY(mcp::serve_stdio(mcp::make_stitch_tools(ops, &docs), serve));
  return CommandEnd::succeeded;
}

}  // namespace

CommandAction setup_mcp(CLI::App& app) {
  auto options = std::make_shared<McpCommandOptions>();
  app.add_flag(
      "--skill", options->skill,
      "Print the skill file (workflow, program ABI, the judge's rules, feedback) and exit");
  app.add_option("--record-dir", options->record_dir,
                 "Where calls.jsonl records every request and response (default "
                 "RUNS_DIR/mcp-<time>)");
  app.add_option("--docs-index", options->docs_index,
                 "The documentation index query_docs searches (default: the one `stitchcuda rag "
                 "index` builds)");
  add_runs_dir_option(app, options->runs_dir);
  add_insecure_sandbox_option(app, options->insecure_sandbox);
  options->build_cache.add_to(
      app, "Build cache directory (default $STITCH_BUILD_CACHE or ~/.cache/stitchcuda/builds)",
      "Build into the attempt directory");
  return [options]() { return run_mcp(*options); };
}

}  // namespace stitch::cli
