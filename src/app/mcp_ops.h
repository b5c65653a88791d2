// `mcp`: the tool server's work on this machine (mcp/stitch_tools.h's StitchOps): capture through
// the Python harness (app/capture.h), verify through verify_program with the real Verifier — the
// same hardened judge and sandbox as `stitchcuda verify` —, profile through profile_target, a run
// directory's state through its typed readers. Captures, verifications and profiles run one at a
// time (one GPU, timings undisturbed by a neighbour); reading a run's state and querying the docs
// do not wait for them.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mcp/stitch_tools.h"
#include "util/result.h"

namespace stitch::rag {
class DocIndex;
}

namespace stitch::app {

// The server owner's choices, which no tool argument can change.
struct McpOpsOptions {
  std::string runs_dir = "runs";          // where run directories go unless a call names another
  std::filesystem::path build_cache_dir;  // empty: build into the attempt directory
  // Required sandbox layers waived for verification (--insecure-sandbox on `stitchcuda mcp` only;
  // never a tool argument).
  std::vector<std::string> insecure_sandbox;
  double capture_timeout_s = 600;
  // Every progress line also goes here (the CLI: stderr).
  std::function<void(const std::string&)> log;
};

class SystemStitchOps : public mcp::StitchOps {
 public:
  explicit SystemStitchOps(McpOpsOptions options) : options_(std::move(options)) {}

  Result<mcp::CaptureReply> capture(const mcp::CaptureRequest& request,
                                    const mcp::ProgressReport& progress) override;
  Result<mcp::VerifyReply> verify(const mcp::VerifyRequest& request,
                                  const mcp::ProgressReport& progress) override;
  Result<mcp::ProfileReply> profile(const mcp::ProfileProgramRequest& request,
                                    const mcp::ProgressReport& progress) override;
  Result<nlohmann::json> run_state(const std::filesystem::path& run_dir) override;

 private:
  std::string runs_dir(const std::string& asked) const;
  std::function<void(const std::string&)> sink(const mcp::ProgressReport& progress) const;

  McpOpsOptions options_;
  std::mutex gpu_work_;  // one capture / verification / profile at a time
};

// query_docs over the documentation index (src/rag): opened on the first query, so a server
// started before `stitchcuda rag index` finds the index once it exists. `index_path` empty: the
// default index (rag::default_index_path()). Queries may come from several tool-call threads.
class RagDocsSearch : public mcp::DocsSearch {
 public:
  explicit RagDocsSearch(std::filesystem::path index_path);
  ~RagDocsSearch() override;
  Result<std::vector<mcp::DocsHit>> query(std::string_view query, int k) override;

 private:
  std::filesystem::path index_path_;
  std::mutex mutex_;
  std::unique_ptr<rag::DocIndex> index_;
};

// A run directory as read_run_state answers it: {run_dir, state (state.json through its reader,
// or null), summary (summary.json, or null), attempts [{attempt, outcome, state, reason}] (each
// attempts/NN's verify.json through its reader; attempts without one are listed with nulls)}.
// Not a run directory: bad_input. Takes no lock: a run under way can be read.
Result<nlohmann::json> read_run_overview(const std::filesystem::path& run_dir);

}  // namespace stitch::app
