// Sandbox set-up, process and thread listing; see sandbox.h. The seccomp filter is in seccomp.cc.
#include "runner/sandbox.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "util/pid_namespace.h"

extern char** environ;

namespace stitch::runner {
namespace {

namespace fs = std::filesystem;

void lower_limit(int resource, uint64_t value, const char* name, SandboxReport& report) {
  rlimit current{};
  if (getrlimit(resource, &current) != 0) return;
  rlim_t wanted = static_cast<rlim_t>(value);
  rlimit next{std::min(current.rlim_cur, wanted), std::min(current.rlim_max, wanted)};
  if (setrlimit(resource, &next) != 0)
    report.notes.push_back(fmt::format("{}: setrlimit failed: {}", name, std::strerror(errno)));
}

bool write_text(const char* path, const std::string& text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

void isolate_network(SandboxReport& report) {
  if (unshare(CLONE_NEWNET) == 0) {
    report.network_namespace = true;
    report.network_detail = "unshare(CLONE_NEWNET)";
    return;
  }
  std::string first_error = std::strerror(errno);
  // Unprivileged: a user namespace grants the capability inside it. Needs a single-threaded
  // process, which the runner still is here (no CUDA, no watchdog yet).
  uid_t uid = getuid();
  gid_t gid = getgid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0) {
    // Keep our ids visible as themselves inside the namespace (files, /proc).
    write_text("/proc/self/setgroups", "deny");
    write_text("/proc/self/uid_map", fmt::format("{} {} 1", uid, uid));
    write_text("/proc/self/gid_map", fmt::format("{} {} 1", gid, gid));
    report.network_namespace = true;
    report.network_detail = "unshare(CLONE_NEWUSER|CLONE_NEWNET)";
    return;
  }
  report.network_detail = fmt::format("not permitted: CLONE_NEWNET: {}; with CLONE_NEWUSER: {}",
                                      first_error, std::strerror(errno));
}

bool removed_by_name(std::string_view name, bool under_profiler) {
  static constexpr std::string_view prefixes[] = {"PYTHON",     "TORCH",       "STITCH",
                                                  "CONDA",      "VIRTUAL_ENV", "PYTEST",
                                                  "LD_PRELOAD", "LD_AUDIT",    "OLDPWD"};
  if (under_profiler && name.starts_with("LD_PRELOAD")) return false;
  for (auto prefix : prefixes)
    if (name.starts_with(prefix)) return true;
  return false;
}

// [start, end) of the initial argument and environment blocks: the memory that /proc/self/cmdline
// and /proc/self/environ show (fields 48-51 of /proc/self/stat).
struct InitialBlocks {
  uintptr_t arg_start = 0, arg_end = 0, env_start = 0, env_end = 0;
};

InitialBlocks initial_blocks() {
  InitialBlocks blocks;
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');
  if (close == std::string::npos) return blocks;
  std::istringstream fields(text.substr(close + 2));
  std::vector<std::string> values;
  for (std::string field; fields >> field;)
    values.push_back(field);
  // values[0] is field 3 (state); field n is values[n - 3].
  if (values.size() < 49) return blocks;
  blocks.arg_start = std::stoull(values[45]);
  blocks.arg_end = std::stoull(values[46]);
  blocks.env_start = std::stoull(values[47]);
  blocks.env_end = std::stoull(values[48]);
  return blocks;
}

void wipe_if_inside(char* text, uintptr_t start, uintptr_t end) {
  auto address = reinterpret_cast<uintptr_t>(text);
  if (address >= start && address < end) std::memset(text, 0, std::strlen(text));
}

// Rebuilds the environment without the judge's traces and wipes the initial blocks, whose memory
// is what /proc/self/environ and /proc/self/cmdline (which names the run directory) show. Only
// those blocks are wiped: glibc's setenv may reuse strings it allocated earlier.
void scrub_environment(const SandboxOptions& options, const fs::path& work_dir, int argc,
                       char** argv, SandboxReport& report) {
  std::vector<char*> originals;
  for (char** entry = environ; entry && *entry; ++entry)
    originals.push_back(*entry);
  std::map<std::string, std::string> kept;
  for (char* entry : originals) {
    std::string_view text = entry;
    size_t eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    std::string name(text.substr(0, eq));
    std::string_view value = text.substr(eq + 1);
    bool private_value = false;
    for (const auto& path : options.private_paths)
      if (path.size() > 1 && value.find(path) != std::string_view::npos) private_value = true;
    if (removed_by_name(name, options.under_profiler) || private_value) {
      report.removed_environment.push_back(name);
      continue;
    }
    kept[name] = std::string(value);
  }
  kept["HOME"] = work_dir.string();
  kept["TMPDIR"] = work_dir.string();
  kept["PWD"] = work_dir.string();
  InitialBlocks blocks = initial_blocks();
  clearenv();
  // A profiler's injected library may hold getenv() pointers into the initial block: under one,
  // the block is left as it is (the program was verified already; this run only measures it).
  if (!options.under_profiler) {
    for (char* entry : originals)
      wipe_if_inside(entry, blocks.env_start, blocks.env_end);
    for (int i = 1; i < argc; ++i)
      wipe_if_inside(argv[i], blocks.arg_start, blocks.arg_end);
  }
  for (const auto& [name, value] : kept)
    setenv(name.c_str(), value.c_str(), 1);
}

Result<fs::path> prepare_work_dir(const SandboxOptions& options, bool& created) {
  std::error_code ec;
  if (!options.work_dir.empty()) {
    fs::create_directories(options.work_dir, ec);
    if (ec) return make_error("{}: cannot create: {}", options.work_dir.string(), ec.message());
    // Cleared: nothing of the judge's, nor of an earlier candidate's, may be found here.
    for (const auto& entry : fs::directory_iterator(options.work_dir, ec))
      fs::remove_all(entry, ec);
    if (ec) return make_error("{}: cannot clear: {}", options.work_dir.string(), ec.message());
    return fs::absolute(options.work_dir);
  }
  STITCH_ASSIGN_OR_RETURN(fs::path made, create_temp_work_dir());
  created = true;
  return made;
}

}  // namespace

Result<fs::path> create_temp_work_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = fmt::format("{}/stitch-runner-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!mkdtemp(buffer.data()))
    return make_error("{}: mkdtemp failed: {}", pattern, std::strerror(errno));
  return fs::path(buffer.data());
}

Result<SandboxReport> enter_sandbox(const SandboxOptions& options, int argc, char** argv) {
  SandboxReport report;
  STITCH_ASSIGN_OR_RETURN(report.work_dir, prepare_work_dir(options, report.created_work_dir));
  if (chdir(report.work_dir.c_str()) != 0)
    return make_error("{}: chdir failed: {}", report.work_dir.string(), std::strerror(errno));

  lower_limit(RLIMIT_CORE, 0, "RLIMIT_CORE", report);
  lower_limit(RLIMIT_FSIZE, options.max_file_bytes, "RLIMIT_FSIZE", report);
  lower_limit(RLIMIT_NOFILE, options.max_open_files, "RLIMIT_NOFILE", report);
  // No RLIMIT_AS: CUDA reserves far more virtual address space than it uses.

  pid_t parent = getppid();
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
    report.notes.push_back(fmt::format("PR_SET_PDEATHSIG: {}", std::strerror(errno)));
  if (getppid() != parent) raise(SIGKILL);  // the parent died before the flag was set
  // Orphaned descendants are re-parented to us, so list_child_processes sees daemons too.
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
    report.notes.push_back(fmt::format("PR_SET_CHILD_SUBREAPER: {}", std::strerror(errno)));

  if (options.isolate_network)
    isolate_network(report);
  else
    report.network_detail = "disabled by --no-network-isolation";

  scrub_environment(options, report.work_dir, argc, argv, report);

  // Descriptors inherited from the orchestrator (none are expected) are not the candidate's.
  // Under a profiler they include its own channel, opened before main.
  if (options.under_profiler)
    report.notes.push_back("inherited descriptors kept: running under a profiler");
  else if (close_range(options.keep_fd == 3 ? 4 : 3, ~0u, 0) != 0)
    report.notes.push_back(fmt::format("close_range: {}", std::strerror(errno)));
  int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0 && null_fd != 0) {
    dup2(null_fd, 0);
    ::close(null_fd);
  }
  return report;
}

void leave_sandbox(const SandboxReport& report) {
  if (!report.created_work_dir) return;
  std::error_code ec;
  fs::remove_all(report.work_dir, ec);
}

std::vector<int> list_child_processes() {
  std::vector<int> children;
  pid_t self = proc_self_pid();  // /proc's numbering, like the ppids below
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses; the last ')' ends it.
    size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(text.substr(close + 1));
    std::string state;
    int ppid = 0;
    fields >> state >> ppid;
    if (ppid == self) children.push_back(std::stoi(name));
  }
  return children;
}

void kill_processes(const std::vector<int>& pids) {
  std::vector<pid_t> ours;  // /proc may number them otherwise than kill() does here
  for (int pid : pids)
    if (pid_t own = pid_in_own_namespace(pid); own > 0) ours.push_back(own);
  for (pid_t pid : ours)
    kill(pid, SIGKILL);
  for (pid_t pid : ours)
    waitpid(pid, nullptr, 0);
}

std::vector<int> list_threads() {
  std::vector<int> tids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc/self/task", ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos)
      tids.push_back(std::stoi(name));
  }
  std::sort(tids.begin(), tids.end());
  return tids;
}

std::string thread_name(int tid) {
  std::ifstream comm(fmt::format("/proc/self/task/{}/comm", tid));
  std::string name;
  std::getline(comm, name);
  return name;
}

std::vector<int> threads_started(const std::vector<int>& after, const std::vector<int>& before) {
  std::vector<int> started;
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                      std::back_inserter(started));
  return started;
}

std::string describe_threads(const std::vector<int>& tids) {
  std::string text;
  for (int tid : tids)
    text += fmt::format("{}{} ({})", text.empty() ? "" : ", ", tid, thread_name(tid));
  return text;
}

}  // namespace stitch::runner
