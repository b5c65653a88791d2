"""Limits on a harness process that runs task code (src/util/task_limits.h), applied as the package
is imported, before any task file or torch is loaded.

Task files are trusted code, like a build script, but a runaway one must not take the machine:

- Memory: STITCH_TASK_MEMORY_BYTES becomes RLIMIT_DATA (soft and hard). Not RLIMIT_AS: a CUDA
  process reserves address space far beyond what it uses, so an address-space limit breaks cuInit;
  RLIMIT_DATA counts private writable memory only (the heap, CPU tensors), not those PROT_NONE
  reservations nor device memory.
- The process group dies with the orchestrator: the orchestrator starts each harness process as the
  leader of its own group with PR_SET_PDEATHSIG (src/util/spawn.cc), which ends the leader only.
  With STITCH_TASK_GROUP_GUARD=1 the leader forks a guard that holds the read end of a pipe whose
  write end only the leader holds; when the leader dies for any reason (the guard reads end of
  file), or the orchestrator does (the leader is reparented: a task that ignores SIGTERM), the guard
  SIGKILLs the whole group within a quarter second, so nothing the task started (subprocesses,
  compile workers) outlives it.
"""
import os
import signal


def _apply_memory_limit():
    value = os.environ.get("STITCH_TASK_MEMORY_BYTES", "")
    if not value.isdigit() or int(value) == 0:
        return
    import resource
    limit = int(value)
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def _parent_of(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _guard(read_end, leader, orchestrator):
    """The guard's whole life: wait for the leader's end or the orchestrator's (a leader that
    ignores SIGTERM is reparented when the orchestrator dies), then end the group."""
    try:
        import select
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        os.closerange(0, read_end)  # the leader's stdin/stdout/stderr: their readers wait on them
        os.closerange(read_end + 1, 1 << 16)
        while True:
            try:
                ready, _, _ = select.select([read_end], [], [], 0.25)
            except InterruptedError:
                continue
            if ready and not os.read(read_end, 1):
                break
            if _parent_of(leader) != orchestrator:
                break
        os.killpg(0, signal.SIGKILL)
    finally:
        os._exit(0)


def _start_group_guard():
    if os.environ.get("STITCH_TASK_GROUP_GUARD") != "1" or os.getpgrp() != os.getpid():
        return
    read_end, write_end = os.pipe()  # not inherited across exec
    leader, orchestrator = os.getpid(), os.getppid()
    if os.fork() == 0:
        os.close(write_end)
        _guard(read_end, leader, orchestrator)
    os.close(read_end)
    # Forked workers (capture-batch) must not keep the pipe open: only the leader's end counts.
    # Once per process: a worker's own forks find it closed already.
    held = {"fd": write_end}

    def close_in_child():
        fd = held.pop("fd", None)
        if fd is not None:
            os.close(fd)

    os.register_at_fork(after_in_child=close_in_child)
    globals()["_guard_pipe"] = held  # the leader's end stays open as long as the leader lives


def apply():
    _apply_memory_limit()
    _start_group_guard()
