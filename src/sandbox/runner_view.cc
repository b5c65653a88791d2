// runner_isolation; see runner_view.h.
#include "sandbox/runner_view.h"

#include <glob.h>
#include <link.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include "util/text.h"

namespace stitch::sandbox {
namespace {

namespace fs = std::filesystem;

int add_loaded_library(dl_phdr_info* info, size_t, void* data) {
  auto* dirs = static_cast<std::set<fs::path>*>(data);
  if (info->dlpi_name && info->dlpi_name[0] == '/') {
    std::error_code ec;
    fs::path real = fs::canonical(info->dlpi_name, ec);
    if (!ec) dirs->insert(real.parent_path());
  }
  return 0;
}

std::vector<fs::path> nvidia_devices() {
  std::vector<fs::path> devices;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/dev", ec))
    if (entry.path().filename().string().starts_with("nvidia") && !entry.is_directory(ec))
      devices.push_back(entry.path());
  for (const auto& entry : fs::directory_iterator("/dev/nvidia-caps", ec))
    devices.push_back(entry.path());
  std::sort(devices.begin(), devices.end());
  return devices;
}

// Whether `path` is `root` or below it, by components (both absolute and normal).
bool contains(const fs::path& root, const fs::path& path) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p)
    if (p == path.end() || *r != *p) return false;
  return true;
}

void read_loader_config(const fs::path& conf, int depth, std::vector<fs::path>& dirs) {
  if (depth > 8) return;  // includes that include each other
  std::ifstream in(conf);
  for (std::string raw; std::getline(in, raw);) {
    std::string line(trim(raw.substr(0, raw.find('#'))));
    if (line.empty()) continue;
    if (line.starts_with("include") && line.size() > 7 && std::isspace(line[7])) {
      fs::path pattern = trim(line.substr(8));
      if (pattern.is_relative()) pattern = conf.parent_path() / pattern;
      glob_t matches{};
      if (glob(pattern.c_str(), 0, nullptr, &matches) == 0)
        for (size_t i = 0; i < matches.gl_pathc; ++i)
          read_loader_config(matches.gl_pathv[i], depth + 1, dirs);
      globfree(&matches);
    } else if (line.front() == '/' &&
               std::find(dirs.begin(), dirs.end(), fs::path(line).lexically_normal()) == dirs.end()) {
      dirs.push_back(fs::path(line).lexically_normal());
    }
  }
}

void follow_links(const fs::path& path, const std::vector<fs::path>& roots, int hops,
                  std::set<fs::path>& found) {
  if (hops > 40) return;  // a loop of links: the loader fails on it too (ELOOP)
  fs::path prefix;
  for (auto part = path.begin(); part != path.end(); ++part) {
    prefix /= *part;
    std::error_code ec;
    if (!fs::is_symlink(prefix, ec)) continue;
    fs::path target = fs::read_symlink(prefix, ec);
    if (ec) return;
    if (target.is_relative()) target = prefix.parent_path() / target;
    target = target.lexically_normal();
    if (std::none_of(roots.begin(), roots.end(),
                     [&](const fs::path& root) { return contains(root, target); }))
      found.insert(target);
    for (auto rest = std::next(part); rest != path.end(); ++rest)
      target /= *rest;
    follow_links(target, roots, hops + 1, found);
    return;
  }
}

}  // namespace

std::vector<fs::path> loader_config_dirs(const fs::path& conf) {
  std::vector<fs::path> dirs;
  read_loader_config(conf, 0, dirs);
  return dirs;
}

std::vector<fs::path> link_targets_outside(const fs::path& path,
                                           const std::vector<fs::path>& roots) {
  std::set<fs::path> found;
  follow_links(fs::absolute(path).lexically_normal(), roots, 0, found);
  return {found.begin(), found.end()};
}

IsolationConfig runner_isolation(const RunnerView& view) {
  IsolationConfig config;
  config.writable_dir = fs::absolute(view.work_dir).lexically_normal();
  std::set<fs::path> read_only = {"/usr", "/lib", "/lib64", "/etc/ld.so.cache", "/opt"};
  if (!view.program.empty()) read_only.insert(fs::absolute(view.program));
  dl_iterate_phdr(add_loaded_library, &read_only);
  if (const char* paths = std::getenv("LD_LIBRARY_PATH")) {
    std::string list = paths;
    for (size_t start = 0, end; start <= list.size(); start = end + 1) {
      end = std::min(list.find(':', start), list.size());
      if (end > start && list[start] == '/') read_only.insert(list.substr(start, end - start));
    }
  }
  for (const auto& path : view.extra_read_only)
    read_only.insert(fs::absolute(path));
  // The loader's directories: bound where no read-only path holds them yet (a bind inside one
  // could land on the host's side of a link), then every link on the way to a read-only path or
  // to a loader directory that leaves the view is bound at its target.
  std::error_code ec;
  const std::vector<fs::path> loader_dirs = loader_config_dirs();
  const std::vector<fs::path> allowed(read_only.begin(), read_only.end());
  auto inside_allowed = [&](const fs::path& path) {
    return std::any_of(allowed.begin(), allowed.end(),
                       [&](const fs::path& root) { return contains(root, path); });
  };
  for (const auto& dir : loader_dirs)
    if (!inside_allowed(dir) && fs::is_directory(dir, ec)) read_only.insert(dir);
  const std::vector<fs::path> roots(read_only.begin(), read_only.end());
  std::vector<fs::path> reached = roots;
  reached.insert(reached.end(), loader_dirs.begin(), loader_dirs.end());
  for (const auto& path : reached)
    for (auto& target : link_targets_outside(path, roots))
      read_only.insert(std::move(target));
  config.read_only_paths.assign(read_only.begin(), read_only.end());
  config.devices = {"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"};
  for (const auto& device : nvidia_devices())
    config.devices.push_back(device);
  config.sys_read_only = true;
  config.new_pid_namespace = true;
  config.keep_fds = view.keep_fds;
  return config;
}

}  // namespace stitch::sandbox
