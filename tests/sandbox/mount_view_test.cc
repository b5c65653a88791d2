// The runner's filesystem view on a machine laid out like the GPU machines: the driver libraries
// on a mount of their own below an allowed path (a container runtime's /usr/local/nvidia), named
// through a symbolic link (lib -> lib64) in LD_LIBRARY_PATH. The view must show them, read-only;
// and the Landlock layer must let the process write its own /proc files (the CUDA driver's cuInit
// opens one with O_TRUNC). Needs root (it makes the mount below the allowed path); skips visibly.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "sandbox/escape_probe.h"  // tests/sandbox
#include "sandbox/isolation.h"

namespace stitch::sandbox {
namespace {

namespace fs = std::filesystem;
using testing::Probe;

// In the child: a tmpfs at `outer`/driver holding lib64/libdriver.txt and lib -> lib64, then the
// isolation with `outer` and `outer`/driver/lib read-only, then the checks.
[[noreturn]] void child_main(const fs::path& base, int report_fd) {
  Probe probe(report_fd);
  fs::path outer = base / "outer", driver = outer / "driver";
  if (unshare(CLONE_NEWNS) != 0 ||
      mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      mount("tmpfs", driver.c_str(), "tmpfs", 0, "mode=0755") != 0) {
    probe.line("SKIP", "cannot make the driver mount here (not root?)");
    _exit(0);
  }
  fs::create_directory(driver / "lib64");
  std::ofstream(driver / "lib64" / "libdriver.txt") << "driver\n";
  fs::permissions(driver / "lib64" / "libdriver.txt", fs::perms::all);
  fs::create_directory_symlink("lib64", driver / "lib");
  IsolationConfig config;
  config.writable_dir = base / "work";
  config.read_only_paths = {outer, driver / "lib"};
  config.keep_fds = {report_fd};
  // Root's own /proc files: after the uid drop the process is not dumpable and they belong to root,
  // so file permissions, not Landlock, would decide the check below.
  config.drop_privileges = false;
  std::vector<LayerReport> layers = apply_isolation(config);
  for (const auto& layer : layers)
    probe.line(
        layer.set_up || layer.name == "user" || layer.name == "pid_namespace" ? "OK" : "FAIL",
        fmt::format("layer {}: {}", layer.name, layer.detail));
  std::ifstream through_link(driver / "lib" / "libdriver.txt");
  std::string text;
  std::getline(through_link, text);
  probe.works(text == "driver", "read the driver mount through lib -> lib64");
  probe.refused(::open((driver / "lib64" / "written").c_str(), O_WRONLY | O_CREAT, 0644) < 0,
                "create a file on the driver mount");
  probe.refused(::open((driver / "lib64" / "libdriver.txt").c_str(), O_WRONLY | O_TRUNC) < 0,
                "truncate a driver file");
  probe.works(::open("/proc/self/comm", O_WRONLY | O_TRUNC) >= 0,
              "open this process's /proc/self/comm for writing with O_TRUNC");
  _exit(0);
}

TEST(SandboxMountView, MountsBelowAllowedPathsAreVisibleReadOnly) {
  char pattern[] = "/tmp/stitch-mount-view-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  fs::path base = pattern;
  fs::create_directories(base / "outer" / "driver");
  fs::create_directories(base / "work");
  fs::permissions(base, fs::perms::all);  // the uid drop must not be what stops a read
  if (geteuid() == 0) (void)chown((base / "work").c_str(), 65534, 65534);
  testing::ProbeRun run =
      testing::run_probe_child([&](int report_fd) { child_main(base, report_fd); });
  const std::string& lines = run.lines;
  std::error_code ec;
  fs::remove_all(base, ec);
  std::cout << lines;
  if (lines.find("SKIP ") != std::string::npos) GTEST_SKIP() << lines;
  EXPECT_TRUE(run.exited_cleanly()) << "child status " << run.status;
  std::istringstream stream(lines);
  int checks = 0;
  for (std::string line; std::getline(stream, line);) {
    EXPECT_FALSE(line.starts_with("FAIL")) << line;
    if (line.starts_with("OK")) ++checks;
  }
  EXPECT_GE(checks, 12) << lines;
}

}  // namespace
}  // namespace stitch::sandbox
