// nvcc in a sandbox (issue 15 item 5): the compiler child runs in new network, IPC, PID and mount
// namespaces whose view is the program's sources and the allowed include folders (the project's
// include/ and kernels/, the CUDA toolkit, the system compiler's /usr) read-only, the build output
// dir writable and /tmp a private tmpfs; Landlock repeats the write rule; no_new_privs. The layers
// are set up in the spawned child before exec (CommandSpec::child_setup), reported back through a
// pipe, and recorded in the build result (verify.json build.sandbox). A required layer that is
// missing stops the child before nvcc runs — fail closed — unless the user accepted it
// (--insecure-sandbox compiler).
#pragma once

#include <filesystem>
#include <vector>

#include "sandbox/isolation.h"
#include "util/spawn.h"

namespace stitch {

// The view of one compile.
struct CompilerSandboxPaths {
  std::filesystem::path output_dir;              // writable
  std::vector<std::filesystem::path> read_only;  // sources' dirs, include dirs, the toolkit
};

// The isolation of a compile: `paths` plus what every compile needs (/usr, /etc/ld.so.cache,
// /etc/alternatives, /bin and /lib spellings, /dev/null, /dev/zero, /dev/urandom).
sandbox::IsolationConfig compiler_isolation(const CompilerSandboxPaths& paths);

// One sandboxed spawn: install() sets `command.child_setup`; after the child ran (or failed to
// start), layers() reads what its set-up reported. Not reusable across spawns.
class CompilerSandbox {
 public:
  // `allow_incomplete`: exec nvcc even when a required layer is missing (--insecure-sandbox).
  CompilerSandbox(sandbox::IsolationConfig config, bool allow_incomplete);
  ~CompilerSandbox();
  CompilerSandbox(const CompilerSandbox&) = delete;
  CompilerSandbox& operator=(const CompilerSandbox&) = delete;

  // An Error when the report pipe cannot be made.
  Status install(CommandSpec& command);
  // The child's layer reports (empty when it never got to report).
  std::vector<sandbox::LayerReport> layers();

 private:
  sandbox::IsolationConfig config_;
  bool allow_incomplete_;
  int read_fd_ = -1;
  int write_fd_ = -1;
};

}  // namespace stitch
