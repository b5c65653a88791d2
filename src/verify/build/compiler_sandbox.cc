// The nvcc sandbox; see compiler_sandbox.h.
#include "verify/build/compiler_sandbox.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace stitch {

namespace fs = std::filesystem;

sandbox::IsolationConfig compiler_isolation(const CompilerSandboxPaths& paths) {
  sandbox::IsolationConfig config;
  config.writable_dir = fs::absolute(paths.output_dir).lexically_normal();
  for (const auto& path : paths.read_only)
    config.read_only_paths.push_back(fs::absolute(path).lexically_normal());
  for (const char* system :
       {"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc/ld.so.cache", "/etc/alternatives", "/opt"})
    config.read_only_paths.emplace_back(system);
  config.devices = {"/dev/null", "/dev/zero", "/dev/urandom"};
  config.tmp_tmpfs = true;
  config.new_pid_namespace = true;   // its /proc shows the compile's processes only
  config.drop_privileges = false;    // outputs stay the caller's; the view does the confining
  config.close_descriptors = false;  // spawn's pipes are close-on-exec
  return config;
}

CompilerSandbox::CompilerSandbox(sandbox::IsolationConfig config, bool allow_incomplete)
    : config_(std::move(config)), allow_incomplete_(allow_incomplete) {}

CompilerSandbox::~CompilerSandbox() {
  if (read_fd_ >= 0) ::close(read_fd_);
  if (write_fd_ >= 0) ::close(write_fd_);
}

Status CompilerSandbox::install(CommandSpec& command) {
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0)
    return make_error(ErrorKind::machine, "compiler sandbox: pipe: {}", std::strerror(errno));
  read_fd_ = ends[0];
  write_fd_ = ends[1];
  // Runs in the forked child: reports its layers, then allows exec only when complete.
  command.child_setup = [this] {
    std::vector<sandbox::LayerReport> layers = sandbox::apply_isolation(config_);
    std::string text = sandbox::layers_to_json(layers).dump();
    ssize_t written = ::write(write_fd_, text.data(), text.size());
    (void)written;
    sandbox::LayerGaps gaps =
        sandbox::find_layer_gaps(layers, sandbox::kRequiredCompilerLayers, {});
    if (gaps.missing.empty() || allow_incomplete_) return true;
    errno = EPERM;
    return false;
  };
  return {};
}

std::vector<sandbox::LayerReport> CompilerSandbox::layers() {
  if (write_fd_ >= 0) ::close(write_fd_);
  write_fd_ = -1;
  std::string text;
  char buffer[4096];
  for (ssize_t got; (got = ::read(read_fd_, buffer, sizeof buffer)) > 0;)
    text.append(buffer, got);
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return doc.is_discarded() ? std::vector<sandbox::LayerReport>{} : sandbox::layers_from_json(doc);
}

}  // namespace stitch
