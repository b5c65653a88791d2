// The nvcc sandbox (src/verify/build/compiler_sandbox.h) through the real spawn path: a probe
// command in the compiler's sandbox must not read /etc/shadow, write beside its output dir, nor
// reach a listener in the host's network namespace, while writing its output works; a sandbox
// that cannot be set up stops the child before exec (fail closed) unless the caller allows it.
#include "verify/build/compiler_sandbox.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "support/loopback_listener.h"
#include "util/process.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

class CompilerSandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Not under /tmp: the sandbox's /tmp is a private tmpfs, where a write "outside" would land
    // harmlessly and prove nothing. A build tree under /tmp (a clean clone there) uses /var/tmp.
    base_ = fs::absolute(fmt::format("compiler_sandbox_test_{}", getpid()));
    if (under_tmp(base_)) base_ = fs::path("/var/tmp") / base_.filename();
    ASSERT_FALSE(under_tmp(base_)) << base_;
    fs::remove_all(base_);
    fs::create_directories(base_ / "sources");
    fs::create_directories(base_ / "build");
    ASSERT_NE(listener_.port(), 0);
  }
  void TearDown() override { fs::remove_all(base_); }

  static bool under_tmp(const fs::path& path) {
    const fs::path tmp = fs::weakly_canonical("/tmp");
    const fs::path resolved = fs::weakly_canonical(path);
    return std::mismatch(tmp.begin(), tmp.end(), resolved.begin(), resolved.end()).first ==
           tmp.end();
  }

  // A probe that prints what it managed; "CONTAINED" when nothing.
  ProcessSpec probe() const {
    std::string script = fmt::format(R"(
import socket
got = []
try:
    open('/etc/shadow').read(); got.append('read /etc/shadow')
except Exception: pass
try:
    open('{0}/escaped.txt', 'w').write('x'); got.append('wrote outside')
except Exception: pass
try:
    socket.create_connection(('127.0.0.1', {1}), timeout=2); got.append('connected')
except Exception: pass
open('{0}/build/inside.txt', 'w').write('ok')
print(', '.join(got) or 'CONTAINED')
)",
                                     base_.string(), listener_.port());
    ProcessSpec spec;
    spec.argv = {"/usr/bin/python3", "-c", script};
    spec.cwd = base_ / "build";
    spec.timeout_s = 60;
    return spec;
  }

  CompilerSandboxPaths paths() const { return {base_ / "build", {base_ / "sources"}}; }

  fs::path base_;
  test_support::LoopbackListener listener_;
};

TEST_F(CompilerSandboxTest, ProbeIsContainedAndWritesItsOutput) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3 for the probe";
  ProcessSpec spec = probe();
  CompilerSandbox sandbox(compiler_isolation(paths()), /*allow_incomplete=*/false);
  ASSERT_TRUE(sandbox.install(spec).ok());
  SystemProcessRunner runner;
  auto result = runner.run(spec);
  std::vector<sandbox::LayerReport> layers = sandbox.layers();
  std::string described;
  for (const auto& layer : layers)
    described += fmt::format("{} {} ({})\n", layer.name, layer.set_up, layer.detail);
  ASSERT_TRUE(result.ok()) << result.error().message << "\n" << described;
  EXPECT_EQ(result->stdout_text, "CONTAINED\n") << result->stderr_text << described;
  EXPECT_TRUE(fs::exists(base_ / "build" / "inside.txt"));
  EXPECT_FALSE(fs::exists(base_ / "escaped.txt"));
  EXPECT_TRUE(
      sandbox::find_layer_gaps(layers, sandbox::kRequiredCompilerLayers, {}).missing.empty())
      << described;
}

TEST_F(CompilerSandboxTest, IncompleteSandboxStopsTheChildUnlessAllowed) {
  sandbox::IsolationConfig broken = compiler_isolation(paths());
  broken.writable_dir = "relative/dir";  // the mount view refuses it
  for (bool allowed : {false, true}) {
    ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c", "echo ran"};
    spec.timeout_s = 30;
    CompilerSandbox sandbox(broken, allowed);
    ASSERT_TRUE(sandbox.install(spec).ok());
    SystemProcessRunner runner;
    auto result = runner.run(spec);
    std::vector<sandbox::LayerReport> layers = sandbox.layers();
    const sandbox::LayerReport* mount =
        sandbox::find_layer(layers, sandbox::Layer::mount_namespace);
    ASSERT_NE(mount, nullptr);
    EXPECT_FALSE(mount->set_up);
    if (allowed) {
      ASSERT_TRUE(result.ok()) << result.error().message;
      EXPECT_EQ(result->stdout_text, "ran\n");
    } else {
      ASSERT_FALSE(result.ok());
      EXPECT_NE(result.error().message.find("sandbox set-up failed"), std::string::npos)
          << result.error().message;
    }
  }
}

}  // namespace
}  // namespace stitch
