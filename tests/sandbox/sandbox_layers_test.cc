// Layer reports and their gaps (src/sandbox/layers.h), the --insecure-sandbox names, and the
// seccomp program's two modes (src/sandbox/seccomp_filter.h) in a forked child.
#include <errno.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "sandbox/layers.h"
#include "sandbox/runner_view.h"
#include "sandbox/seccomp_filter.h"
#include "sandbox/syscall_table.h"
#include "support/in_child.h"

namespace stitch::sandbox {
namespace {

std::vector<LayerReport> all_required_set_up() {
  std::vector<LayerReport> reports;
  for (Layer layer : kRequiredRunnerLayers)
    reports.push_back({std::string(enum_name(layer)), true, "ok"});
  return reports;
}

TEST(SandboxLayers, CompleteReportHasNoGaps) {
  EXPECT_TRUE(find_layer_gaps(all_required_set_up(), kRequiredRunnerLayers, {}).complete());
}

TEST(SandboxLayers, MissingAndNotSetUpLayersAreNamed) {
  std::vector<LayerReport> reports = all_required_set_up();
  reports.erase(reports.begin());  // user: absent
  reports[0].set_up = false;       // no_new_privs: reported, not set up
  reports[0].detail = "prctl: EINVAL";
  LayerGaps gaps = find_layer_gaps(reports, kRequiredRunnerLayers, {});
  EXPECT_EQ(gaps.missing, (std::vector<std::string>{"user", "no_new_privs"}));
  std::string reason = incomplete_reason(gaps, reports);
  EXPECT_NE(reason.find("sandbox_incomplete: user, no_new_privs"), std::string::npos) << reason;
  EXPECT_NE(reason.find("user: not reported"), std::string::npos) << reason;
}

TEST(SandboxLayers, InsecureLayersWaiveOnlyWhatTheyName) {
  auto insecure = parse_insecure_layers({"user", "seccomp"});
  ASSERT_TRUE(insecure.ok());
  LayerGaps gaps = find_layer_gaps({}, kRequiredRunnerLayers, *insecure);
  EXPECT_EQ(gaps.waived, (std::vector<std::string>{"user", "seccomp"}));
  EXPECT_EQ(gaps.missing.size(), kRequiredRunnerLayers.size() - 2);
  auto all = parse_insecure_layers({"all"});
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(find_layer_gaps({}, kRequiredRunnerLayers, *all).missing.empty());
  EXPECT_EQ(insecure_layer_names(*all), std::vector<std::string>{"all"});
  auto bad = parse_insecure_layers({"firewall"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("firewall"), std::string::npos);
}

TEST(SandboxLayers, LandlockIsNotRequired) {
  for (Layer layer : kRequiredRunnerLayers)
    EXPECT_NE(layer, Layer::landlock);
}

TEST(SandboxLayers, JsonRoundTrip) {
  std::vector<LayerReport> reports = {{"user", true, "uid 65534"}, {"landlock", false, "no ABI"}};
  std::vector<LayerReport> back = layers_from_json(layers_to_json(reports));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].name, "landlock");
  EXPECT_FALSE(back[1].set_up);
  EXPECT_EQ(back[1].detail, "no ABI");
  EXPECT_TRUE(layers_from_json(nlohmann::json::parse(R"([5, {"name": 3}])")).size() == 1);
}

TEST(SeccompTables, DenylistHoldsTheIssuesCallsAndNeverMeetsTheAllowlist) {
  for (const char* name : {"ptrace",
                           "process_vm_readv",
                           "process_vm_writev",
                           "setns",
                           "unshare",
                           "mount",
                           "umount2",
                           "pivot_root",
                           "bpf",
                           "perf_event_open",
                           "kcmp",
                           "open_by_handle_at",
                           "keyctl",
                           "add_key",
                           "request_key",
                           "io_uring_setup",
                           "io_uring_enter",
                           "io_uring_register",
                           "userfaultfd",
                           "personality",
                           "execve",
                           "execveat"}) {
    bool denied = false;
    for (const auto& rule : denied_syscalls())
      denied |= rule.name == name;
    EXPECT_TRUE(denied) << name;
  }
  for (const auto& allowed : allowed_syscalls())
    for (const auto& denied : denied_syscalls())
      EXPECT_NE(allowed.nr, denied.nr) << allowed.name;
}

using test_support::in_child;

TEST(SeccompFilter, DenylistModeRefusesTheDenylistAndAllowsTheRest) {
  int code = in_child([] {
    LayerReport report = install_seccomp_filter(SeccompMode::denylist);
    if (!report.set_up || report.detail.find("denylist") != 0) return 10;
    if (syscall(SYS_ptrace, 0, 0, 0, 0) != -1 || errno != EPERM) return 1;
    int fd = socket(AF_INET, SOCK_STREAM, 0);  // not on the denylist
    if (fd < 0) return 2;
    if (fork() != -1 || errno != EPERM) return 3;
    auto refusals = seccomp_refusals();
    bool ptrace_counted = false, clone_counted = false;
    for (const auto& refusal : refusals) {
      ptrace_counted |= refusal.name == "ptrace" && refusal.count == 1;
      clone_counted |= refusal.name == "clone";
    }
    return ptrace_counted && clone_counted ? 0 : 4;
  });
  EXPECT_EQ(code, 0);
}

TEST(SeccompFilter, AllowlistModeRefusesUnlistedCallsWithEperm) {
  int code = in_child([] {
    LayerReport report = install_seccomp_filter(SeccompMode::allowlist);
    if (!report.set_up || report.detail.find("allowlist") != 0) return 10;
    if (socket(AF_INET, SOCK_STREAM, 0) != -1 || errno != EPERM) return 1;
    if (socket(AF_UNIX, SOCK_STREAM, 0) < 0) return 2;
    if (syscall(SYS_sethostname, "x", 1) != -1 || errno != EPERM) return 3;  // on neither list
    if (getpid() <= 0) return 4;
    for (const auto& refusal : seccomp_refusals())
      if (refusal.nr == SYS_sethostname && refusal.name == "syscall " + std::to_string(refusal.nr))
        return 0;
    return 5;
  });
  EXPECT_EQ(code, 0);
}

TEST(RunnerView, HoldsTheProgramTheLibrariesAndTheDevices) {
  IsolationConfig config = runner_isolation({"/tmp/work", "/tmp/build/program.so", {}, {7}});
  auto has = [](const std::vector<std::filesystem::path>& paths, const char* path) {
    return std::find(paths.begin(), paths.end(), std::filesystem::path(path)) != paths.end();
  };
  EXPECT_EQ(config.writable_dir, "/tmp/work");
  EXPECT_TRUE(has(config.read_only_paths, "/tmp/build/program.so"));
  EXPECT_TRUE(has(config.read_only_paths, "/usr"));
  EXPECT_TRUE(has(config.read_only_paths, "/etc/ld.so.cache"));
  EXPECT_FALSE(has(config.read_only_paths, "/tmp/build"));  // the program, not its directory
  EXPECT_TRUE(has(config.devices, "/dev/null"));
  EXPECT_TRUE(config.new_pid_namespace && config.sys_read_only && config.mount_proc);
  EXPECT_EQ(config.keep_fds, std::vector<int>{7});
}

// The H200 machine's layout: the loader's cache names /usr/local/cuda/..., a link through
// /etc/alternatives, outside a view of /usr.
TEST(RunnerView, LinksThatLeaveTheViewAreFollowedToTheirTargets) {
  namespace fs = std::filesystem;
  char pattern[] = "/tmp/stitch-links-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const fs::path base = pattern;
  fs::create_directories(base / "usr/local/cuda-13.0/targets/lib");
  fs::create_directories(base / "etc/alternatives");
  fs::create_directory_symlink(base / "usr/local/cuda-13.0", base / "etc/alternatives/cuda");
  fs::create_directory_symlink(base / "etc/alternatives/cuda", base / "usr/local/cuda");
  fs::create_directory_symlink("targets/lib", base / "usr/local/cuda-13.0/lib64");  // relative
  fs::create_directory_symlink("loop_b", base / "usr/loop_a");
  fs::create_directory_symlink("loop_a", base / "usr/loop_b");
  const std::vector<fs::path> roots = {base / "usr"};

  EXPECT_EQ(link_targets_outside(base / "usr/local/cuda/lib64", roots),
            std::vector<fs::path>{base / "etc/alternatives/cuda"});
  // Links that stay inside the roots, paths without links, and loops add nothing.
  EXPECT_TRUE(link_targets_outside(base / "usr/local/cuda-13.0/lib64", roots).empty());
  EXPECT_TRUE(link_targets_outside(base / "usr/local/cuda-13.0/targets/lib", roots).empty());
  EXPECT_TRUE(link_targets_outside(base / "usr/loop_a/x", roots).empty());
  // With the alternatives folder allowed too, nothing is missing.
  EXPECT_TRUE(link_targets_outside(base / "usr/local/cuda/lib64",
                                   {base / "usr", base / "etc/alternatives"})
                  .empty());
  std::error_code ec;
  fs::remove_all(base, ec);
}

TEST(RunnerView, LoaderConfigDirsFollowIncludes) {
  namespace fs = std::filesystem;
  char pattern[] = "/tmp/stitch-ldconf-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const fs::path base = pattern;
  fs::create_directories(base / "ld.so.conf.d");
  std::ofstream(base / "ld.so.conf") << "# libc default\ninclude ld.so.conf.d/*.conf\n/opt/lib \n";
  std::ofstream(base / "ld.so.conf.d/a-cuda.conf") << "/usr/local/cuda/lib64\n\n/opt/lib\n";
  std::ofstream(base / "ld.so.conf.d/b-nvidia.conf") << "  /usr/local/nvidia/lib64  # driver\n";
  std::ofstream(base / "ld.so.conf.d/ignored.txt") << "/not/included\n";
  EXPECT_EQ(loader_config_dirs(base / "ld.so.conf"),
            (std::vector<fs::path>{"/usr/local/cuda/lib64", "/opt/lib", "/usr/local/nvidia/lib64"}));
  EXPECT_TRUE(loader_config_dirs(base / "missing.conf").empty());
  std::error_code ec;
  fs::remove_all(base, ec);
}

}  // namespace
}  // namespace stitch::sandbox
