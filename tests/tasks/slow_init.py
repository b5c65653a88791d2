# Own task: y = relu(x * scale) whose construction can be made to stall, so a test can interrupt
# the orchestrator in the middle of a capture (tests/cli/run_dir_test.sh). With
# STITCH_TEST_SLOW_INIT=PATH the model writes PATH when its construction starts, then sleeps for
# two minutes; without it, it builds at once.
import os
import time

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        marker = os.environ.get("STITCH_TEST_SLOW_INIT")
        if marker:
            with open(marker, "w") as out:
                out.write(str(os.getpid()))
            time.sleep(120)
        self.scale = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return torch.relu(x * self.scale)


rows = 256
features = 128


def get_inputs():
    return [torch.randn(rows, features)]


def get_init_inputs():
    return [features]
