// The worker's isolation; see worker_isolation.h.
#include "runner/worker_isolation.h"

#include "sandbox/runner_view.h"

namespace stitch::runner {

sandbox::IsolationConfig worker_isolation(const std::filesystem::path& work_dir,
                                          const std::filesystem::path& program, int channel_fd,
                                          const sandbox::InsecureLayers& waived) {
  sandbox::IsolationConfig config =
      sandbox::runner_isolation({work_dir, program, {}, {channel_fd}});
  config.new_pid_namespace = false;
  using sandbox::Layer;
  config.drop_privileges = !waived.waives(Layer::user);
  config.no_new_privs = !waived.waives(Layer::no_new_privs);
  config.new_mount_namespace = !waived.waives(Layer::mount_namespace);
  config.new_ipc_namespace = !waived.waives(Layer::ipc_namespace);
  config.new_network_namespace = !waived.waives(Layer::network_namespace);
  config.landlock = !waived.waives(Layer::landlock);
  return config;
}

}  // namespace stitch::runner
