// The steps of apply_isolation (isolation.h), one per file: identity.cc (user), mount_view.cc
// (mount_namespace), landlock.cc (landlock). Internal to src/sandbox.
#pragma once

#include <string>

#include "sandbox/isolation.h"

namespace stitch::sandbox::detail {

// Writes `text` to a /proc file (uid_map, setgroups); false with errno set when it cannot.
bool write_proc_file(const char* path, const std::string& text);

// Unprivileged: a user namespace that maps the caller's own uid and gid (setgroups denied), so the
// namespaces created after it are owned by it. Empty on success, else why not.
std::string enter_user_namespace();

// The `user` layer: drops to config.uid/gid (root) or every capability (in a user namespace), then
// verifies that no capability is left and setuid(0) fails.
LayerReport drop_privileges(const IsolationConfig& config, bool in_user_namespace);

// The `mount_namespace` layer's view (the namespace itself exists already).
LayerReport build_mount_view(const IsolationConfig& config);

// The `landlock` layer.
LayerReport restrict_with_landlock(const IsolationConfig& config);

// "EPERM (Operation not permitted)".
std::string errno_text(int error);

}  // namespace stitch::sandbox::detail
