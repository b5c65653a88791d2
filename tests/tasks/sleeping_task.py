# Test task (tests/harness/task_process_test.cc): loading it starts a subprocess, ignores SIGTERM,
# records its process group, the subprocess and its RLIMIT_DATA in $STITCH_TEST_PID_FILE, and sleeps
# for as long as it is left alone: a task the orchestrator must not leave behind when it dies.
import os
import resource
import signal
import subprocess
import time

import torch
import torch.nn as nn

_pid_file = os.environ.get("STITCH_TEST_PID_FILE")
if _pid_file:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _sleeper = subprocess.Popen(["sleep", "1000"])
    with open(_pid_file + ".tmp", "w") as out:
        out.write(f"{os.getpgrp()} {_sleeper.pid} {resource.getrlimit(resource.RLIMIT_DATA)[0]}\n")
    os.rename(_pid_file + ".tmp", _pid_file)
    time.sleep(1000)


class Model(nn.Module):
    def forward(self, x):
        return x + 1


def get_inputs():
    return [torch.randn(4)]


def get_init_inputs():
    return []
