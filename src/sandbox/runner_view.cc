// runner_isolation; see runner_view.h.
#include "sandbox/runner_view.h"

#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>

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

}  // namespace

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
