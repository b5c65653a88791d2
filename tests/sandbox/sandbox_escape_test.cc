// The adversarial escape suite of the isolation layers (src/sandbox): a forked child applies the
// isolation a runner worker gets, then tries each escape as a hostile program would — writing
// outside its writable dir, reading /etc/shadow and the parent's /proc entries and descriptors,
// reaching a loopback listener in the host network namespace, regaining privileges, and (after the
// seccomp allowlist) the refused system calls, also as raw syscall() spellings. Every attempt must
// fail; the honest near-misses (files in the writable dir, an allowed library, a thread, mmap,
// clocks) must work. Run as root (the uid drop) and as uid 65534 (the user-namespace path); where
// the kernel refuses something, the test says so in its output and asserts everything else.
#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "sandbox/escape_probe.h"  // tests/sandbox
#include "sandbox/isolation.h"
#include "sandbox/seccomp_filter.h"
#include "support/loopback_listener.h"

namespace stitch::sandbox {
namespace {

namespace fs = std::filesystem;
using testing::Probe;

// What the parent prepared for the child to attack.
struct Target {
  fs::path writable;   // the child's writable dir
  fs::path outside;    // a world-writable dir outside it, holding `victim`
  fs::path library;    // a library the child may read (libc)
  pid_t parent = 0;    // the test process (host pid)
  int parent_fd = -1;  // a descriptor the parent holds (on outside/victim)
  int port = 0;        // a TCP listener on 127.0.0.1 in the host network namespace
};

fs::path libc_path() {
  Dl_info info{};
  dladdr(reinterpret_cast<void*>(&::write), &info);
  return fs::canonical(info.dli_fname);
}

void attack_files(Probe& probe, const Target& target) {
  int fd = ::open((target.outside / "created").c_str(), O_WRONLY | O_CREAT, 0644);
  probe.refused(fd < 0, "create a file outside the writable dir");
  probe.refused(
      ::rename((target.outside / "victim").c_str(), (target.outside / "moved").c_str()) != 0,
      "rename a file outside the writable dir");
  probe.refused(::unlink((target.outside / "victim").c_str()) != 0,
                "unlink a file outside the writable dir");
  probe.refused(::open("/etc/shadow", O_RDONLY) < 0, "read /etc/shadow");
  probe.refused(syscall(SYS_openat, AT_FDCWD, "/etc/passwd", O_RDONLY) < 0,
                "raw openat of /etc/passwd");
  probe.refused(::open("/escape", O_WRONLY | O_CREAT, 0644) < 0, "create /escape in the root");
  probe.refused(::mkdir((target.writable.parent_path() / "escape-dir").c_str(), 0755) != 0,
                "mkdir beside the writable dir");
  probe.refused(::open(target.library.c_str(), O_WRONLY) < 0, "open the allowed library for write");
  probe.refused(::open("/proc/sysrq-trigger", O_WRONLY) < 0, "write /proc/sysrq-trigger");
}

void attack_processes(Probe& probe, const Target& target) {
  std::string proc = fmt::format("/proc/{}", target.parent);
  probe.refused(::open((proc + "/environ").c_str(), O_RDONLY) < 0, "read the parent's environ");
  probe.refused(::open((proc + "/cmdline").c_str(), O_RDONLY) < 0, "read the parent's cmdline");
  probe.refused(opendir((proc + "/fd").c_str()) == nullptr, "list the parent's descriptors");
  probe.refused(::open(fmt::format("{}/fd/{}", proc, target.parent_fd).c_str(), O_RDONLY) < 0,
                "open the parent's descriptor through /proc");
  probe.refused(::fcntl(target.parent_fd, F_GETFD) < 0, "use the parent's descriptor number");
  DIR* dir = opendir("/proc");
  if (!dir) {
    probe.note("no /proc in the view at all");
    return;
  }
  std::string pids;
  bool parent_listed = false;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    pids += fmt::format(" {}", entry->d_name);
    if (std::atoi(entry->d_name) == target.parent) parent_listed = true;
  }
  closedir(dir);
  probe.refused(!parent_listed, "see the parent in /proc (pids:" + pids + ")");
}

void attack_network(Probe& probe, const Target& target, const char* when) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    probe.refused(true, fmt::format("open a TCP socket {} ({})", when, strerror(errno)));
    return;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(target.port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  probe.refused(!connected,
                fmt::format("connect to the host's 127.0.0.1:{} {}", target.port, when));
  ::close(fd);
}

void attack_privileges(Probe& probe) {
  probe.refused(setuid(0) != 0, "setuid(0)");
  std::ifstream status("/proc/self/status");
  std::string line;
  bool seen = false;
  while (std::getline(status, line))
    if (line.starts_with("CapEff:")) {
      seen = true;
      probe.refused(line.find_first_not_of("0\t ", 7) == std::string::npos,
                    "keep a capability: " + line);
    }
  if (!seen) probe.note("CapEff not readable (no /proc/self/status)");
}

// After the seccomp allowlist: each call must come back refused.
void attack_syscalls(Probe& probe, const Target& target) {
  probe.refused(unshare(CLONE_NEWUSER) != 0, "unshare(CLONE_NEWUSER)");
  probe.refused(syscall(SYS_unshare, CLONE_NEWNS) != 0, "raw unshare(CLONE_NEWNS)");
  probe.refused(setns(0, 0) != 0, "setns");
  probe.refused(mount("none", target.writable.c_str(), "tmpfs", 0, nullptr) != 0, "mount tmpfs");
  probe.refused(syscall(SYS_umount2, "/proc", MNT_DETACH) != 0, "umount2 /proc");
  probe.refused(ptrace(PTRACE_ATTACH, target.parent, nullptr, nullptr) != 0, "ptrace the parent");
  char buffer[16];
  iovec local{buffer, sizeof buffer}, remote{reinterpret_cast<void*>(&buffer), sizeof buffer};
  probe.refused(process_vm_readv(target.parent, &local, 1, &remote, 1, 0) < 0,
                "process_vm_readv on the parent");
  probe.refused(syscall(SYS_personality, 0xffffffffUL) < 0, "personality");
  probe.refused(syscall(SYS_keyctl, 0, 0, 0, 0, 0) < 0 && errno == EPERM, "keyctl");
  probe.refused(syscall(SYS_add_key, "user", "k", "v", 1, -4) < 0, "add_key");
  probe.refused(syscall(SYS_bpf, 0, nullptr, 0) < 0 && errno == EPERM, "bpf");
  probe.refused(syscall(SYS_io_uring_setup, 8, buffer) < 0 && errno == EPERM, "io_uring_setup");
  probe.refused(syscall(SYS_userfaultfd, 0) < 0 && errno == EPERM, "userfaultfd");
  probe.refused(syscall(SYS_perf_event_open, buffer, 0, -1, -1, 0) < 0 && errno == EPERM,
                "perf_event_open");
  probe.refused(syscall(SYS_kill, target.parent, 0) != 0, "kill(parent, 0)");
  probe.refused(syscall(SYS_pidfd_open, 1, 0) < 0, "pidfd_open");
  pid_t child = fork();
  if (child == 0) _exit(0);
  probe.refused(child < 0 && errno == EPERM, "fork");
  probe.refused(syscall(SYS_clone3, buffer, 0) < 0 && errno == ENOSYS, "clone3 (ENOSYS)");
  char* argv[] = {const_cast<char*>("/bin/sh"), nullptr};
  probe.refused(execve("/bin/sh", argv, nullptr) != 0, "execve");
  probe.refused(::socket(AF_INET, SOCK_STREAM, 0) < 0 && errno == EPERM, "socket(AF_INET)");
  probe.refused(::socket(AF_NETLINK, SOCK_RAW, 0) < 0, "socket(AF_NETLINK)");
}

void honest_work(Probe& probe, const Target& target) {
  fs::path file = target.writable / "honest.txt";
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  probe.works(fd >= 0 && ::write(fd, "ok", 2) == 2, "write a file in the writable dir");
  if (fd >= 0) ::close(fd);
  char text[4] = {};
  fd = ::open(file.c_str(), O_RDONLY);
  probe.works(fd >= 0 && ::read(fd, text, 2) == 2 && std::string(text) == "ok", "read it back");
  if (fd >= 0) ::close(fd);
  probe.works(::rename(file.c_str(), (target.writable / "renamed.txt").c_str()) == 0,
              "rename inside the writable dir");
  char magic[4] = {};
  fd = ::open(target.library.c_str(), O_RDONLY);
  probe.works(fd >= 0 && ::read(fd, magic, 4) == 4 && magic[1] == 'E', "read the allowed library");
  if (fd >= 0) ::close(fd);
  std::atomic<int> ran{0};
  std::thread worker([&] { ran = 1; });
  worker.join();
  probe.works(ran == 1, "start a thread");
  void* memory = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  probe.works(memory != MAP_FAILED && munmap(memory, 1 << 20) == 0, "mmap and munmap");
  timespec now{};
  probe.works(clock_gettime(CLOCK_MONOTONIC, &now) == 0, "clock_gettime");
  probe.works(getrandom(text, sizeof text, 0) == sizeof text, "getrandom");
  probe.works(::open("/dev/null", O_WRONLY) >= 0, "open /dev/null");
}

// The child: isolate, attack, report. Never returns.
[[noreturn]] void child_main(const Target& target, int report_fd, bool as_unprivileged) {
  Probe probe(report_fd);
  if (as_unprivileged &&
      (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0))
    probe.note("cannot become uid 65534 first: running as " + std::to_string(getuid()));
  IsolationConfig config;
  config.writable_dir = target.writable;
  config.read_only_paths = {target.library};
  config.devices = {"/dev/null", "/dev/zero", "/dev/urandom"};
  config.new_pid_namespace = true;
  config.keep_fds = {report_fd};
  std::vector<LayerReport> layers = apply_isolation(config);
  const LayerReport* user = find_layer(layers, Layer::user);
  if (as_unprivileged && user && !user->set_up &&
      user->detail.find("CLONE_NEWUSER") != std::string::npos) {
    // A kernel that refuses unprivileged user namespaces leaves nothing to isolate with here.
    probe.line("SKIP", "this kernel refuses user namespaces to uid 65534: " + user->detail);
    _exit(0);
  }
  for (const auto& layer : layers) {
    std::string text = fmt::format("layer {}: {} ({})", layer.name,
                                   layer.set_up ? "set up" : "NOT set up", layer.detail);
    // Landlock is defence in depth: a kernel without it is noted, not failed.
    if (layer.set_up || layer.name == "landlock")
      probe.line(layer.set_up ? "OK" : "NOTE", text);
    else
      probe.line("FAIL", text);
  }
  attack_files(probe, target);
  attack_processes(probe, target);
  attack_network(probe, target, "before seccomp");
  attack_privileges(probe);
  LayerReport seccomp = install_seccomp_filter(SeccompMode::allowlist);
  probe.works(seccomp.set_up, "install the seccomp allowlist: " + seccomp.detail);
  honest_work(probe, target);
  attack_syscalls(probe, target);
  attack_network(probe, target, "after seccomp");
  std::string refused;
  for (const auto& refusal : seccomp_refusals())
    refused += fmt::format(" {}x{}", refusal.name, refusal.count);
  probe.works(refused.find("ptrace") != std::string::npos, "refusals counted:" + refused);
  _exit(0);
}

class SandboxEscape : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/stitch-escape-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    base_ = pattern;
    target_.writable = base_ / "work";
    target_.outside = base_ / "outside";
    fs::create_directories(target_.writable);
    fs::create_directories(target_.outside);
    // World-writable: only the sandbox, not file permissions, may stop the child.
    fs::permissions(base_, fs::perms::all);
    fs::permissions(target_.outside, fs::perms::all);
    std::ofstream(target_.outside / "victim") << "parent's file\n";
    fs::permissions(target_.outside / "victim", fs::perms::all);
    if (GetParam() && geteuid() == 0) (void)chown(target_.writable.c_str(), 65534, 65534);
    target_.library = libc_path();
    target_.parent = getpid();
    target_.parent_fd = ::open((target_.outside / "victim").c_str(), O_RDONLY);
    ASSERT_NE(listener_.port(), 0);
    target_.port = listener_.port();
  }
  void TearDown() override {
    ::close(target_.parent_fd);
    std::error_code ec;
    fs::remove_all(base_, ec);
  }

  // Runs the child; returns its report lines.
  std::string run_child() {
    testing::ProbeRun run = testing::run_probe_child(
        [this](int report_fd) { child_main(target_, report_fd, GetParam()); });
    EXPECT_TRUE(run.exited_cleanly()) << "child status " << run.status;
    return run.lines;
  }

  fs::path base_;
  Target target_;
  test_support::LoopbackListener listener_;
};

TEST_P(SandboxEscape, EveryEscapeFailsAndHonestWorkRuns) {
  std::string lines = run_child();
  std::cout << (GetParam() ? "[as uid 65534, user namespace]\n" : "[as the test's uid]\n") << lines;
  if (lines.find("SKIP ") != std::string::npos) GTEST_SKIP() << lines;
  std::istringstream stream(lines);
  int checks = 0;
  for (std::string line; std::getline(stream, line);) {
    EXPECT_FALSE(line.starts_with("FAIL")) << line;
    if (line.starts_with("OK")) ++checks;
  }
  EXPECT_GT(checks, 40) << "the child stopped early:\n" << lines;
  // Nothing changed outside the writable dir.
  EXPECT_TRUE(fs::exists(target_.outside / "victim"));
  EXPECT_FALSE(fs::exists(target_.outside / "created"));
  EXPECT_FALSE(fs::exists(target_.outside / "moved"));
  EXPECT_FALSE(fs::exists(base_ / "escape-dir"));
  EXPECT_FALSE(fs::exists("/escape"));
  EXPECT_TRUE(fs::exists(target_.writable / "renamed.txt"));
  EXPECT_FALSE(fs::exists(target_.writable / ".stitch-sandbox-root"));
}

INSTANTIATE_TEST_SUITE_P(AsRootAndUnprivileged, SandboxEscape, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "unprivileged" : "caller"; });

}  // namespace
}  // namespace stitch::sandbox
