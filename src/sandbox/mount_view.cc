// The `mount_namespace` layer's filesystem view (isolation.h step 3): a tmpfs root that holds bind
// mounts of only the allowed paths, at their own paths, then pivot_root into it.
//
// The tmpfs is mounted on an empty directory made inside the writable dir (the only place we may
// create one); the bind mounts are made into it while the host tree is still visible. After
// pivot_root that directory is no mount point any more in this namespace and is removed.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "sandbox/isolation_steps.h"

namespace stitch::sandbox::detail {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRootDirName = ".stitch-sandbox-root";

// Mount flags a bind remount must keep: a user namespace may not clear the locked ones.
unsigned long locked_flags(const fs::path& path) {
  struct statvfs info {};
  if (statvfs(path.c_str(), &info) != 0) return 0;
  unsigned long flags = 0;
  if (info.f_flag & ST_NOSUID) flags |= MS_NOSUID;
  if (info.f_flag & ST_NODEV) flags |= MS_NODEV;
  if (info.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  if (info.f_flag & ST_NOATIME) flags |= MS_NOATIME;
  if (info.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
  if (info.f_flag & ST_RELATIME) flags |= MS_RELATIME;
  return flags;
}

// Creates the mount point for `source` at `target` (a directory, or an empty file).
bool make_mount_point(const fs::path& source, const fs::path& target) {
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (fs::is_directory(source, ec)) {
    fs::create_directories(target, ec);
    return fs::is_directory(target, ec);
  }
  int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

// Makes the bind at `target` nosuid and, unless `writable`, read-only and nodev. A recursive bind
// (read-only ones, where the kernel has mount_setattr, 5.12) gets it on every mount below too;
// otherwise the top mount, which is all a non-recursive bind holds.
std::string restrict_bind(const fs::path& target, bool writable, bool recursive) {
  if (recursive) {
    mount_attr attributes{};
    attributes.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NODEV;
    if (mount_setattr(AT_FDCWD, target.c_str(), AT_RECURSIVE, &attributes, sizeof attributes) != 0)
      return fmt::format("mount_setattr {}: {}", target.string(), errno_text(errno));
    return "";
  }
  unsigned long flags = MS_REMOUNT | MS_BIND | MS_NOSUID | locked_flags(target);
  if (!writable) flags |= MS_RDONLY | MS_NODEV;
  if (mount(nullptr, target.c_str(), nullptr, flags, nullptr) != 0)
    return fmt::format("remount {}: {}", target.string(), errno_text(errno));
  return "";
}

// Whether mount_setattr exists: then binds are recursive, so a mount below an allowed path (the
// driver libraries a container runtime mounts at /usr/local/nvidia, say) stays visible in the view.
bool kernel_has_mount_setattr() {
  mount_attr none{};
  return mount_setattr(-1, "", 0, &none, sizeof none) == 0 || errno != ENOSYS;
}

// Binds `source` at root + source; read-only unless `writable`. Empty on success. The writable
// dir's bind is never recursive: the tmpfs root is mounted inside it and must stay out of the view.
std::string bind(const fs::path& root, const fs::path& source, bool writable) {
  static const bool can_recurse = kernel_has_mount_setattr();
  const bool recursive = can_recurse && !writable;
  fs::path target = root / source.relative_path();
  if (!make_mount_point(source, target)) return fmt::format("{}: no mount point", source.string());
  if (mount(source.c_str(), target.c_str(), nullptr, MS_BIND | (recursive ? MS_REC : 0), nullptr) !=
      0)
    return fmt::format("bind {}: {}", source.string(), errno_text(errno));
  return restrict_bind(target, writable, recursive);
}

// A fresh procfs: other uids' processes invisible where the kernel knows hidepid=invisible (5.8).
std::string mount_proc(const fs::path& root) {
  fs::path target = root / "proc";
  std::error_code ec;
  fs::create_directories(target, ec);
  unsigned long flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
  for (const char* options : {"hidepid=invisible", "hidepid=2"})
    if (mount("proc", target.c_str(), "proc", flags, options) == 0)
      return fmt::format("/proc ({})", options);
  return "no /proc: " + errno_text(errno);
}

std::string mount_tmpfs(const fs::path& target, const char* options) {
  std::error_code ec;
  fs::create_directories(target, ec);
  if (mount("tmpfs", target.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options) != 0)
    return fmt::format("tmpfs on {}: {}", target.string(), errno_text(errno));
  return "";
}

// Everything but the pivot: the tmpfs root and what goes into it. `notes` collects skipped paths.
std::string populate_root(const IsolationConfig& config, const fs::path& root,
                          std::vector<std::string>& notes) {
  if (std::string error = mount_tmpfs(root, "mode=0755,size=16m"); !error.empty()) return error;
  if (config.tmp_tmpfs) {
    if (std::string error = mount_tmpfs(root / "tmp", "mode=1777,size=4g"); !error.empty())
      return error;
  }
  // Every bind, parents before children: a later bind inside an earlier one stays visible.
  std::vector<std::pair<fs::path, bool>> binds;  // path, writable
  for (const auto& path : config.read_only_paths)
    binds.emplace_back(path, false);
  binds.emplace_back(config.writable_dir, true);
  std::stable_sort(binds.begin(), binds.end(), [](const auto& a, const auto& b) {
    return a.first.string().size() < b.first.string().size();
  });
  std::error_code ec;
  for (const auto& [path, writable] : binds) {
    if (!fs::exists(path, ec)) {
      notes.push_back(fmt::format("{} missing", path.string()));
      continue;
    }
    if (std::string error = bind(root, path, writable); !error.empty()) return error;
  }
  for (const auto& device : config.devices) {
    if (!fs::exists(device, ec)) continue;
    fs::path target = root / device.relative_path();
    if (!make_mount_point(device, target) ||
        mount(device.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0)
      return fmt::format("bind {}: {}", device.string(), errno_text(errno));
    mount(nullptr, target.c_str(), nullptr,
          MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NOEXEC | locked_flags(target), nullptr);
  }
  if (config.sys_read_only && fs::exists("/sys", ec)) {
    if (std::string error = bind(root, "/sys", false); !error.empty()) return error;
  }
  if (config.mount_proc) notes.push_back(mount_proc(root));
  return "";
}

std::string pivot_into(const fs::path& root) {
  if (chdir(root.c_str()) != 0) return "chdir new root: " + errno_text(errno);
  // pivot_root(".", "."): the old root ends up stacked on the new one and is detached next.
  if (syscall(SYS_pivot_root, ".", ".") != 0) return "pivot_root: " + errno_text(errno);
  if (umount2(".", MNT_DETACH) != 0) return "detach old root: " + errno_text(errno);
  if (chdir("/") != 0) return "chdir /: " + errno_text(errno);
  // Nothing may be created outside the writable dir: the root tmpfs itself goes read-only.
  if (mount(nullptr, "/", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
            nullptr) != 0)
    return "remount / read-only: " + errno_text(errno);
  return "";
}

}  // namespace

LayerReport build_mount_view(const IsolationConfig& config) {
  LayerReport report{std::string(enum_name(Layer::mount_namespace)), false, ""};
  if (config.writable_dir.empty() || !config.writable_dir.is_absolute())
    return {report.name, false, "the writable dir must be an absolute path"};
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return {report.name, false, "make / private: " + errno_text(errno)};
  fs::path root = config.writable_dir / kRootDirName;
  std::error_code ec;
  fs::create_directory(root, ec);
  if (ec) return {report.name, false, fmt::format("{}: {}", root.string(), ec.message())};
  std::vector<std::string> notes;
  std::string error = populate_root(config, root, notes);
  if (error.empty()) error = pivot_into(root);
  if (!error.empty()) {
    umount2(root.c_str(), MNT_DETACH);  // whatever was mounted there goes with it
    rmdir(root.c_str());
    report.detail = error;
    return report;
  }
  rmdir((config.writable_dir / kRootDirName).c_str());  // no mount point here any more
  if (chdir(config.writable_dir.c_str()) != 0)
    return {report.name, false, "chdir writable dir: " + errno_text(errno)};
  report.set_up = true;
  report.detail = fmt::format(
      "tmpfs root (read-only): {} writable, {} read-only path(s), {} "
      "device(s)",
      config.writable_dir.string(), config.read_only_paths.size(), config.devices.size());
  if (config.tmp_tmpfs) report.detail += ", private /tmp";
  if (config.sys_read_only) report.detail += ", /sys read-only";
  for (const auto& note : notes)
    report.detail += "; " + note;
  return report;
}

}  // namespace stitch::sandbox::detail
