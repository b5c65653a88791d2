// Runs a test body in a forked child (a sandbox layer or a seccomp filter applies to that process
// only, never to the test binary); its exit code, -1 when a signal killed it.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

namespace stitch::test_support {

template <typename Body>
int in_child(Body body) {
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace stitch::test_support
