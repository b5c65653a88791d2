// The `landlock` layer (isolation.h step 5): defence in depth under the mount view. Writes only
// under the writable dir and to this process's own /proc files, reads only the allowed paths,
// devices read-write (with ioctl), /proc and /sys readable; from ABI 4 no TCP bind or connect; from
// ABI 6 no signals to, nor abstract unix sockets of, processes outside the domain. The ABI is
// detected at run time; the kernel headers here may be older than the kernel, so the structure and
// the newer rights are spelled out.
#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "sandbox/isolation_steps.h"

namespace stitch::sandbox::detail {
namespace {

namespace fs = std::filesystem;

// struct landlock_ruleset_attr as of ABI 6; the size passed tells the kernel which fields exist.
struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

constexpr uint64_t kFsTruncate = 1ull << 14;        // ABI 3
constexpr uint64_t kFsIoctlDev = 1ull << 15;        // ABI 5
constexpr uint64_t kNetBindTcp = 1ull << 0;         // ABI 4
constexpr uint64_t kNetConnectTcp = 1ull << 1;      // ABI 4
constexpr uint64_t kScopeAbstractUnix = 1ull << 0;  // ABI 6
constexpr uint64_t kScopeSignal = 1ull << 1;        // ABI 6

constexpr uint64_t kFsRead = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
constexpr uint64_t kFsFileRights =
    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE;

uint64_t handled_fs(int abi) {
  uint64_t rights = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;  // ABI 1: bits 0..12
  if (abi >= 2) rights |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) rights |= kFsTruncate;
  if (abi >= 5) rights |= kFsIoctlDev;
  return rights;
}

// Allows `rights` beneath `path` (only the file rights when it is not a directory). Empty on
// success; a missing path is no error (the mount view skipped it too).
std::string allow(int ruleset, const fs::path& path, uint64_t rights) {
  int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? "" : fmt::format("{}: {}", path.string(), errno_text(errno));
  struct stat info {};
  fstat(fd, &info);
  if (!S_ISDIR(info.st_mode)) rights &= kFsFileRights | kFsTruncate | kFsIoctlDev;
  landlock_path_beneath_attr rule{rights, fd};
  long added = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
  int error = errno;
  ::close(fd);
  if (added != 0) return fmt::format("rule {}: {}", path.string(), errno_text(error));
  return "";
}

std::string add_rules(int ruleset, int abi, const IsolationConfig& config) {
  uint64_t all = handled_fs(abi);
  uint64_t read = kFsRead | LANDLOCK_ACCESS_FS_EXECUTE;
  uint64_t device = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                    (abi >= 3 ? kFsTruncate : 0) | (abi >= 5 ? kFsIoctlDev : 0);
  std::vector<std::pair<fs::path, uint64_t>> rules = {{config.writable_dir, all}};
  for (const auto& path : config.read_only_paths)
    rules.emplace_back(path, read);
  for (const auto& path : config.devices)
    rules.emplace_back(path, device);
  if (config.mount_proc) {
    rules.emplace_back("/proc", kFsRead);
    // The CUDA driver opens files of its own process for writing, with O_TRUNC (cuInit fails with
    // cudaErrorOperatingSystem without both rights; measured on the H200 machine). /proc/self
    // resolves here, so the rule covers this process and its threads only.
    rules.emplace_back("/proc/self",
                       kFsRead | LANDLOCK_ACCESS_FS_WRITE_FILE | (abi >= 3 ? kFsTruncate : 0));
  }
  if (config.sys_read_only) rules.emplace_back("/sys", kFsRead);
  if (config.tmp_tmpfs) rules.emplace_back("/tmp", all);
  for (const auto& [path, rights] : rules)
    if (std::string error = allow(ruleset, path, rights & all); !error.empty()) return error;
  return "";
}

}  // namespace

LayerReport restrict_with_landlock(const IsolationConfig& config) {
  LayerReport report{std::string(enum_name(Layer::landlock)), false, ""};
  if (!config.landlock) return {report.name, false, "disabled by the configuration"};
  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) return {report.name, false, "the kernel lacks Landlock: " + errno_text(errno)};
  RulesetAttr attr{handled_fs(abi), abi >= 4 ? kNetBindTcp | kNetConnectTcp : 0,
                   abi >= 6 ? kScopeAbstractUnix | kScopeSignal : 0};
  size_t size = abi >= 6 ? sizeof(RulesetAttr) : abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
  int ruleset = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, size, 0));
  if (ruleset < 0) return {report.name, false, "landlock_create_ruleset: " + errno_text(errno)};
  std::string error = add_rules(ruleset, static_cast<int>(abi), config);
  // Requires no_new_privs or CAP_SYS_ADMIN; the caller set no_new_privs already.
  if (error.empty() && syscall(SYS_landlock_restrict_self, ruleset, 0) != 0)
    error = "landlock_restrict_self: " + errno_text(errno);
  ::close(ruleset);
  if (!error.empty()) return {report.name, false, error};
  report.set_up = true;
  report.detail = fmt::format("ABI {}: writes only under {}{}{}", abi, config.writable_dir.string(),
                              abi >= 4 ? ", no TCP" : "",
                              abi >= 6 ? ", signals and abstract sockets scoped" : "");
  return report;
}

}  // namespace stitch::sandbox::detail
