// The five stitch tools over fake StitchOps / DocsSearch, through the server as a client calls
// them: requests built from the arguments (defaults filled), answers shaped from typed replies,
// the ops' Errors as tool errors, query_docs without an index a clear tool error, and every
// declared schema within the checker's subset.
#include "mcp/stitch_tools.h"

#include <gtest/gtest.h>

#include "mcp/schema_check.h"
#include "mcp_fakes.h"

namespace stitch::mcp {
namespace {

using nlohmann::json;
using testing::ServerHarness;

class FakeOps : public StitchOps {
 public:
  Result<CaptureReply> capture(const CaptureRequest& request,
                               const ProgressReport& progress) override {
    captures.push_back(request);
    if (progress) progress("capturing");
    if (request.task == "missing.py")
      return make_error(ErrorKind::bad_input, "missing.py: no such task file");
    return CaptureReply{"runs/t-1", 5, 1.5, "5 nodes"};
  }
  Result<VerifyReply> verify(const VerifyRequest& request, const ProgressReport&) override {
    verifies.push_back(request);
    VerifyReply reply;
    reply.report.outcome = Outcome::compile_error;
    reply.report.reason = "prog.cu:3: error: identifier \"cublasLtMatmulX\" is undefined";
    reply.report.summary = {"compile_error"};
    reply.feedback = build_feedback(reply.report);
    reply.attempt = "runs/t-1/attempts/01";
    return reply;
  }
  Result<ProfileReply> profile(const ProfileProgramRequest& request,
                               const ProgressReport&) override {
    profiles.push_back(request);
    return ProfileReply{json{{"kernels", json::array()}}, "runs/t-1/attempts/02/profile.json"};
  }
  Result<json> run_state(const std::filesystem::path& run_dir) override {
    if (run_dir == "nowhere") return make_error(ErrorKind::bad_input, "nowhere: not a run");
    return json{{"run_dir", run_dir.string()}, {"state", nullptr}};
  }
  std::vector<CaptureRequest> captures;
  std::vector<VerifyRequest> verifies;
  std::vector<ProfileProgramRequest> profiles;
};

class FakeDocs : public DocsSearch {
 public:
  Result<std::vector<DocsHit>> query(std::string_view text, int k) override {
    last_k = k;
    if (text == "fail") return make_error("the index is corrupt");
    return std::vector<DocsHit>{{"/usr/local/cuda/include/cublasLt.h", 100, 112, 7.5,
                                 "cublasStatus_t cublasLtMatmul(...);"}};
  }
  int last_k = 0;
};

json call(ServerHarness& h, const std::string& name, json arguments) {
  static int id = 100;
  json reply = h.request(++id, "tools/call", {{"name", name}, {"arguments", arguments}});
  EXPECT_TRUE(reply.contains("result")) << reply.dump();
  return reply["result"];
}

class StitchTools : public ::testing::Test {
 protected:
  void SetUp() override { h_.initialize(); }
  FakeOps ops_;
  FakeDocs docs_;
  ServerHarness h_{make_stitch_tools(ops_, &docs_)};
};

TEST_F(StitchTools, ListsFiveToolsWithCheckableSchemas) {
  json tools = h_.request(1, "tools/list", json::object())["result"]["tools"];
  std::vector<std::string> names;
  for (const auto& tool : tools) {
    names.push_back(tool["name"]);
    EXPECT_TRUE(unsupported_schema_keywords(tool["inputSchema"]).empty()) << tool["name"];
    EXPECT_EQ(tool["inputSchema"]["additionalProperties"], false) << tool["name"];
    EXPECT_FALSE(tool["description"].get<std::string>().empty());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"capture_task", "verify_program", "profile_program",
                                             "query_docs", "read_run_state"}));
}

TEST_F(StitchTools, CaptureFillsDefaultsAndReturnsTheRunDirectory) {
  json result = call(h_, "capture_task", {{"task", "t.py"}});
  EXPECT_EQ(result["isError"], false);
  EXPECT_EQ(result["structuredContent"]["run_dir"], "runs/t-1");
  EXPECT_EQ(result["structuredContent"]["graph_json"], "runs/t-1/graph.json");
  EXPECT_EQ(result["structuredContent"]["nodes"], 5);
  ASSERT_EQ(ops_.captures.size(), 1u);
  EXPECT_EQ(ops_.captures[0].seed, 42);
  EXPECT_FALSE(ops_.captures[0].inference);
  EXPECT_TRUE(ops_.captures[0].runs_dir.empty());

  json missing = call(h_, "capture_task", {{"task", "missing.py"}});
  EXPECT_EQ(missing["isError"], true);
  EXPECT_EQ(missing["content"][0]["text"], "missing.py: no such task file");
}

TEST_F(StitchTools, VerifyReturnsOutcomeFiguresAndFeedback) {
  json result = call(h_, "verify_program",
                     {{"target", "runs/t-1"},
                      {"program", "prog.cu"},
                      {"track", "tf32"},
                      {"sets", 2},
                      {"baselines", false}});
  EXPECT_EQ(result["isError"], false);  // a failed verification is a verdict, not a tool error
  const json& out = result["structuredContent"];
  EXPECT_EQ(out["state"], "verified");
  EXPECT_EQ(out["outcome"], "compile_error");
  EXPECT_EQ(out["passed"], false);
  EXPECT_EQ(out["attempt"], "runs/t-1/attempts/01");
  EXPECT_EQ(out["verify_json"], "runs/t-1/attempts/01/verify.json");
  EXPECT_EQ(out["feedback"]["suggestion"]["rule"], "fix_compile_error");
  EXPECT_TRUE(out["time_ms"].is_null());
  ASSERT_EQ(ops_.verifies.size(), 1u);
  const VerifyRequest& request = ops_.verifies[0];
  EXPECT_EQ(request.programs, std::vector<std::string>{"prog.cu"});
  EXPECT_EQ(request.track, "tf32");
  EXPECT_EQ(request.sets, 2);
  EXPECT_FALSE(request.timing_iters);
  EXPECT_FALSE(request.baselines);

  call(h_, "verify_program", {{"target", "t.py"}, {"program", {"a.cu", "b.cu"}}});
  EXPECT_EQ(ops_.verifies[1].programs, (std::vector<std::string>{"a.cu", "b.cu"}));
  // The sandbox is the server's to waive, not the caller's: no such argument exists.
  json waived = call(h_, "verify_program",
                     {{"target", "t.py"}, {"program", "a.cu"}, {"insecure_sandbox", {"seccomp"}}});
  EXPECT_EQ(waived["isError"], true);
  EXPECT_EQ(ops_.verifies.size(), 2u);
}

TEST_F(StitchTools, ProfileTakesAProgramOrTheReference) {
  json result = call(h_, "profile_program", {{"target", "t.py"}, {"program", "p.cu"}});
  EXPECT_EQ(result["isError"], false);
  EXPECT_EQ(result["structuredContent"]["profile_json"], "runs/t-1/attempts/02/profile.json");
  EXPECT_EQ(ops_.profiles.at(0).top, 3);
  EXPECT_EQ(call(h_, "profile_program", {{"target", "t.py"}})["isError"], true);
  EXPECT_EQ(call(h_, "profile_program",
                 {{"target", "t.py"}, {"program", "p.cu"}, {"reference", true}})["isError"],
            true);
  EXPECT_EQ(ops_.profiles.size(), 1u);
  call(h_, "profile_program", {{"target", "t.py"}, {"reference", true}});
  EXPECT_TRUE(ops_.profiles.at(1).reference);
}

TEST_F(StitchTools, QueryDocsCitesPathAndLines) {
  json result = call(h_, "query_docs", {{"query", "cublasLtMatmul"}});
  EXPECT_EQ(result["isError"], false);
  EXPECT_EQ(docs_.last_k, 5);
  const json& hit = result["structuredContent"]["hits"][0];
  EXPECT_EQ(hit["citation"], "/usr/local/cuda/include/cublasLt.h:100-112");
  EXPECT_NE(result["content"][0]["text"].get<std::string>().find("cublasLt.h:100-112"),
            std::string::npos);
  EXPECT_EQ(call(h_, "query_docs", {{"query", "fail"}})["isError"], true);
  EXPECT_EQ(call(h_, "query_docs", {{"query", "x"}, {"k", 0}})["isError"], true);
}

TEST(StitchToolsWithoutDocs, QueryDocsSaysHowToBuildAnIndex) {
  FakeOps ops;
  ServerHarness h(make_stitch_tools(ops, nullptr));
  h.initialize();
  json result = call(h, "query_docs", {{"query", "cudaMalloc"}});
  EXPECT_EQ(result["isError"], true);
  EXPECT_NE(result["content"][0]["text"].get<std::string>().find("stitchcuda rag index"),
            std::string::npos);
}

TEST_F(StitchTools, ReadRunStatePassesTheDocumentOrTheError) {
  json result = call(h_, "read_run_state", {{"run_dir", "runs/t-1"}});
  EXPECT_EQ(result["structuredContent"]["run_dir"], "runs/t-1");
  json missing = call(h_, "read_run_state", {{"run_dir", "nowhere"}});
  EXPECT_EQ(missing["isError"], true);
  EXPECT_EQ(missing["content"][0]["text"], "nowhere: not a run");
}

}  // namespace
}  // namespace stitch::mcp
