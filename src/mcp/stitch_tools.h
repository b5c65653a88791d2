// The five tools `stitchcuda mcp` offers a coding agent, over the interfaces they need:
//   capture_task     a task .py → a run directory with graph.json, weights and reference outputs
//   verify_program   a program's .cu against its task with the hardened judge (outcome, figures,
//                    feedback), as `stitchcuda verify` does
//   profile_program  a program's (or the reference's) kernels: timeline, counters, bottlenecks
//   query_docs       the CUDA documentation and headers (src/rag, when an index exists)
//   read_run_state   what a run directory holds: state.json, summary.json, its attempts' outcomes
// StitchOps does the work (src/app wires the real Verifier, harness and profilers; tests give
// fakes); these tools only check arguments, call it and shape the answer.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcp/tool.h"
#include "util/result.h"
#include "verify/feedback.h"
#include "verify/verify_report.h"

namespace stitch::mcp {

struct CaptureRequest {
  std::string task;      // a task .py
  std::string runs_dir;  // empty: the server's
  bool inference = false;
  int seed = 42;
};

struct CaptureReply {
  std::filesystem::path run_dir;
  size_t nodes = 0;
  double seconds = 0;
  std::string graph_summary;  // ir::format_graph_summary
};

struct VerifyRequest {
  std::string target;                 // TASK.py or a run directory
  std::vector<std::string> programs;  // .cu files
  std::vector<std::string> include_dirs;
  std::string track = "fp32";
  std::string runs_dir;  // empty: the server's
  std::optional<int> sets;
  std::optional<int> timing_iters;
  bool baselines = true;
  std::string profile;  // a profile.json for the feedback
};

struct VerifyReply {
  VerifyReport report;
  Feedback feedback;
  std::filesystem::path attempt;
};

struct ProfileProgramRequest {
  std::string target;   // TASK.py or a run directory
  std::string program;  // .cu; empty with reference
  bool reference = false;
  int top = 3;
  bool no_ncu = false;
  std::string track = "fp32";
  std::string runs_dir;  // empty: the server's
};

struct ProfileReply {
  nlohmann::json document;  // profile.json
  std::filesystem::path written;
};

// The work behind the tools. An Error is the tool's error (isError); a verification whose
// program fails is a VerifyReply like any other.
class StitchOps {
 public:
  virtual ~StitchOps() = default;
  virtual Result<CaptureReply> capture(const CaptureRequest& request,
                                       const ProgressReport& progress) = 0;
  virtual Result<VerifyReply> verify(const VerifyRequest& request,
                                     const ProgressReport& progress) = 0;
  virtual Result<ProfileReply> profile(const ProfileProgramRequest& request,
                                       const ProgressReport& progress) = 0;
  // {run_dir, state (state.json or null), summary (summary.json or null), attempts [...]}.
  virtual Result<nlohmann::json> run_state(const std::filesystem::path& run_dir) = 0;
};

// One passage of the documentation, cited by path and lines.
struct DocsHit {
  std::string path;
  int line_begin = 0;
  int line_end = 0;
  double score = 0;
  std::string text;
};

// Retrieval over the documentation index (src/rag's search, wired at the app layer).
class DocsSearch {
 public:
  virtual ~DocsSearch() = default;
  virtual Result<std::vector<DocsHit>> query(std::string_view query, int k) = 0;
};

// The tools in the order tools/list gives them. `docs` may be null: query_docs then answers a
// tool error saying how to build an index.
std::vector<std::unique_ptr<Tool>> make_stitch_tools(StitchOps& ops, DocsSearch* docs);

// verify_program's structured answer (also what tests compare).
nlohmann::json verify_reply_to_json(const VerifyReply& reply);

}  // namespace stitch::mcp
