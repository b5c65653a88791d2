"""Fixtures of the verl integration tests: the checkout's paths, a local tokenizer, and real
`stitchcuda-serve --fake-scorer` processes on free loopback ports (the service alone: HTTP, SQLite,
the queue; the fake scorer's verdict comes from markers in the program text, src/serve/fake_scorer.cc).

Run by run_pytest.sh in .venv-verl (integrations/verl/setup.sh); the binaries come from ctest's
environment: STITCHCUDA_BIN, STITCHCUDA_SERVE_BIN.
"""

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SOURCE_DIR = Path(__file__).resolve().parents[3]
INTEGRATION_DIR = SOURCE_DIR / "integrations" / "verl"
sys.path.insert(0, str(INTEGRATION_DIR))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from local_tokenizer import build_tokenizer  # noqa: E402

TOKEN = "verl-integration-test-token"


def binary(variable: str) -> Path:
    value = os.environ.get(variable)
    if not value or not Path(value).is_file():
        pytest.fail(f"{variable} must name the built binary (ctest sets it), got {value!r}")
    return Path(value)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Serve:
    url: str
    process: subprocess.Popen
    log: Path

    def metrics(self) -> str:
        with urllib.request.urlopen(f"{self.url}/metrics", timeout=5) as response:
            return response.read().decode()


@pytest.fixture(scope="session")
def start_serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """start_serve(*args) -> Serve: a fake-scorer service with the test token; stopped (SIGTERM,
    then SIGKILL) at the end of the session."""
    started: list[Serve] = []

    def start(*args: str) -> Serve:
        state = tmp_path_factory.mktemp("serve")
        token_file = state / "token"
        token_file.write_text(TOKEN + "\n")
        port_file = state / "port"
        log = state / "serve.log"
        command = [str(binary("STITCHCUDA_SERVE_BIN")), "--fake-scorer", "--port", "0", "--port-file",
                   str(port_file), "--state-dir", str(state / "state"), "--token-file", str(token_file), *args]
        with log.open("w") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"stitchcuda-serve did not start: {log.read_text()}")
            time.sleep(0.05)
        serve = Serve(f"http://127.0.0.1:{port_file.read_text().strip()}", process, log)
        started.append(serve)
        return serve

    yield start
    for serve in started:
        serve.process.terminate()
    for serve in started:
        try:
            serve.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            serve.process.kill()
            serve.process.wait()


@pytest.fixture(scope="session")
def token_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("token") / "token"
    path.write_text(TOKEN + "\n")
    return path


@pytest.fixture(scope="session")
def tokenizer(tmp_path_factory: pytest.TempPathFactory):
    corpus = [
        "You write one CUDA C++ program. Reply with the program in one ```cuda code block.",
        "```cuda\n#include <stitch/program.h>\n__global__ void relu(const float* x, float* y, int n) {}\n```",
        "## Task (PyTorch)\n```python\nimport torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
        "        return torch.relu(x)\n```\n## Plan\n```json\n{\"subtasks\": []}\n```\n",
    ]
    return build_tokenizer(tmp_path_factory.mktemp("tokenizer"), corpus)


@pytest.fixture(scope="session", autouse=True)
def close_serve_clients() -> Iterator[None]:
    """The HTTP sessions compute_score opened on verl's event loop, closed once at the end."""
    yield
    from verl.utils.ray_utils import get_event_loop

    from stitchcuda_verl.client import close_clients

    get_event_loop().run_until_complete(close_clients())
