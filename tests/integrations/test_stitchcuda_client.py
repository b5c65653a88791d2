"""integrations/common/stitchcuda_client.py and the TRL reward function over a scripted HTTP server:
program extraction, request ids, the client's handling of 200/202 (poll)/429/503 (Retry-After)/
401/409/transport errors, and the reward function's rewards, ids and logs. Standard library + pytest.
"""
import asyncio
import http.server
import json
import os
import socket
import sys
import threading
import types

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "integrations", "common"))
sys.path.insert(0, os.path.join(ROOT, "integrations", "trl"))
import stitchcuda_client as sc  # noqa: E402
from stitchcuda_reward import StitchcudaReward  # noqa: E402

PROGRAM = '#include "stitch/program.h"\nextern "C" int stitch_forward() { return 0; }\n'


# ---- extraction

def test_extracts_the_cuda_block():
    reply = f"Here it is:\n```cuda\n{PROGRAM}```\nDone."
    assert sc.extract_program(reply) == PROGRAM


def test_prefers_the_last_block_with_the_abi_over_snippets():
    reply = ("First a sketch:\n```cuda\n__global__ void k() {}\n```\n"
             f"Final:\n```cpp\n{PROGRAM}```\n```python\nprint(1)\n```\n")
    assert sc.extract_program(reply) == PROGRAM


def test_untagged_block_counts_only_with_the_abi():
    assert sc.extract_program(f"```\n{PROGRAM}```") == PROGRAM
    assert sc.extract_program("```\nint main() {}\n```") is None


def test_tagged_block_without_the_abi_is_still_the_program():
    assert sc.extract_program("```cuda\n__global__ void k() {}\n```") == "__global__ void k() {}\n"


def test_no_program():
    assert sc.extract_program("I cannot do that.") is None
    assert sc.extract_program("```python\nimport torch\n```") is None
    assert sc.extract_program("```cuda\n   \n```") is None
    assert sc.extract_program(None) is None


def test_unclosed_fence_is_no_program():
    assert sc.extract_program(f"```cuda\n{PROGRAM}") is None


def test_reasoning_is_ignored():
    thinking = f"<think>maybe\n```cuda\n{PROGRAM.replace('0', '1')}```\n</think>"
    assert sc.extract_program(thinking + f"```cuda\n{PROGRAM}```") == PROGRAM
    assert sc.extract_program(thinking) is None
    # A template that opens <think> in the prompt leaves only the closing tag in the completion.
    assert sc.extract_program(f"draft ```cuda\nx\n``` </think>\n```cuda\n{PROGRAM}```") == PROGRAM


def test_request_ids_are_stable_distinct_and_acceptable():
    a = sc.request_id_for("relu", PROGRAM, "run/3/0/1", prefix="my run")
    assert a == sc.request_id_for("relu", PROGRAM, "run/3/0/1", prefix="my run")
    assert a != sc.request_id_for("relu", PROGRAM, "run/3/0/2", prefix="my run")
    assert a != sc.request_id_for("gemm", PROGRAM, "run/3/0/1", prefix="my run")
    assert a != sc.request_id_for("relu", PROGRAM + " ", "run/3/0/1", prefix="my run")
    assert len(a) <= 200 and "/" not in a and " " not in a and a.startswith("my_run-")


# ---- a scripted service

def reply(request_id, status="done", reward=2.5, **extra):
    body = {"request_id": request_id, "task": "relu", "status": status, "reward": reward,
            "compiled": status == "done", "correct": status == "done" and reward > 0,
            "hacked": False, "speedup": 1.5 if reward > 0 else None, "baseline": "eager",
            "runtimes": {"candidate_ms": None, "baseline_ms": None}, "error_code": "none",
            "message": "", "breakdown": {"rule": reward, "rubric": {"scores": {"coverage": {"score": 4}}}},
            "queued_s": 0, "scoring_s": 0, "format": "stitchcuda.serve.reply/1"}
    body.update(extra)
    return body


class Scripted:
    """A loopback HTTP server answering each request with the next scripted (status, headers,
    body) for its route; records what it received."""

    def __init__(self, script):
        self.script = {key: list(value) for key, value in script.items()}
        self.received = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *_):
                pass

            def answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                route = "GET poll" if self.path.startswith("/v1/requests/") else f"{self.command} {self.path}"
                outer.received.append((route, self.headers.get("Authorization"), body))
                queue = outer.script.get(route) or [(500, {}, {"message": "unscripted"})]
                status, headers, document = queue.pop(0) if len(queue) > 1 else queue[0]
                if callable(document):
                    document = document(body)
                data = json.dumps(document).encode()
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = answer

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def routes(self):
        return [route for route, _, _ in self.received]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serve():
    servers = []

    def make(script):
        servers.append(Scripted(script))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def client_for(server, sleeps, **options):
    return sc.ServeClient(server.url, "tok", sleep=sleeps.append, **options)


def test_blocking_call_returns_the_final_reply(serve):
    server = serve({"POST /v1/score": [(200, {}, lambda body: reply(body["request_id"]))]})
    score = client_for(server, []).score("relu", PROGRAM, "id-1")
    assert score.reward == 2.5 and score.status == "done" and score.correct and score.speedup == 1.5
    route, auth, body = server.received[0]
    assert auth == "Bearer tok"
    assert body["request_id"] == "id-1" and body["task"] == "relu" and body["source"] == PROGRAM
    assert body["timeout_s"] > 0


def test_polls_while_not_final(serve):
    server = serve({"POST /v1/score": [(202, {}, reply("id-2", status="queued", reward=0))],
                    "GET poll": [(200, {}, reply("id-2", status="running", reward=0)),
                                 (200, {}, reply("id-2", reward=3.0))]})
    sleeps = []
    score = client_for(server, sleeps, poll_interval_s=0.25).score("relu", PROGRAM, "id-2")
    assert score.reward == 3.0
    assert server.routes() == ["POST /v1/score", "GET poll", "GET poll"]
    assert sleeps == [0.25, 0.25]


def test_waits_retry_after_on_429_and_503_and_resends_the_same_id(serve):
    busy = {"request_id": "id-3", "status": "rejected", "error_code": "queue_full"}
    server = serve({"POST /v1/score": [(429, {"Retry-After": "7"}, busy),
                                       (503, {"Retry-After": "2"}, dict(busy, error_code="shutting_down")),
                                       (200, {}, reply("id-3"))]})
    sleeps = []
    score = client_for(server, sleeps).score("relu", PROGRAM, "id-3")
    assert score.reward == 2.5
    assert sleeps == [7.0, 2.0]
    assert [body["request_id"] for _, _, body in server.received] == ["id-3"] * 3


def test_retry_after_is_capped(serve):
    server = serve({"POST /v1/score": [(429, {"Retry-After": "3600"}, {}), (200, {}, reply("id"))]})
    sleeps = []
    client_for(server, sleeps, max_wait_s=5).score("relu", PROGRAM, "id")
    assert sleeps == [5]


def test_wrong_token_raises(serve):
    server = serve({"POST /v1/score": [(401, {"WWW-Authenticate": "Bearer"}, {"message": "wrong token"})]})
    with pytest.raises(sc.ServeAuthError, match="token"):
        client_for(server, []).score("relu", PROGRAM, "id")


def test_refusals_are_zero_reward_data(serve):
    server = serve({"POST /v1/score": [(409, {}, {"error_code": "id_conflict", "message": "other source"})]})
    score = client_for(server, []).score("relu", PROGRAM, "id")
    assert (score.reward, score.status, score.error_code) == (0.0, "refused", "id_conflict")


def test_service_errors_are_final_replies(serve):
    server = serve({"POST /v1/score": [(200, {}, reply("id", status="error", reward=0, error_code="unknown_task"))]})
    score = client_for(server, []).score("relu", PROGRAM, "id")
    assert (score.reward, score.status, score.error_code) == (0.0, "error", "unknown_task")


def test_poll_of_an_unknown_id_resubmits(serve):
    server = serve({"POST /v1/score": [(202, {}, reply("id", status="queued", reward=0)),
                                       (200, {}, reply("id"))],
                    "GET poll": [(404, {}, {"error_code": "not_found"})]})
    assert client_for(server, []).score("relu", PROGRAM, "id").reward == 2.5
    assert server.routes() == ["POST /v1/score", "GET poll", "POST /v1/score"]


def test_transport_errors_back_off_until_the_deadline():
    with socket.socket() as probe:  # a port with nothing listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    now = [0.0]
    sleeps = []

    def sleep(seconds):
        sleeps.append(seconds)
        now[0] += seconds

    client = sc.ServeClient(f"http://127.0.0.1:{port}", None, request_timeout_s=20, sleep=sleep,
                            clock=lambda: now[0])
    score = client.score("relu", PROGRAM, "id")
    assert score.status == "client_timeout" and score.reward == 0.0 and "transport" in score.message
    assert sleeps[:4] == [0.5, 1.0, 2.0, 4.0] and max(sleeps) <= 10.0


def test_bad_url_is_refused():
    with pytest.raises(ValueError):
        sc.ServeClient("ftp://host/x")


# ---- the TRL reward function

def test_reward_function_scores_logs_and_names_itself(serve):
    def answer(body):
        return reply(body["request_id"], reward=4.0 if "fast" in body["source"] else 1.0)

    server = serve({"POST /v1/score": [(200, {}, answer)]})
    reward = StitchcudaReward(server.url, "tok", run_id="t")
    assert reward.__name__ == "stitchcuda"
    block = "```cuda\n{}```"
    completions = [[{"role": "assistant", "content": block.format(PROGRAM + "// fast\n")}],
                   [{"role": "assistant", "content": block.format(PROGRAM)}],
                   [{"role": "assistant", "content": "no code here"}],
                   block.format(PROGRAM)]  # a standard (string) completion
    metrics, extra = {}, {}
    rewards = asyncio.run(reward(
        prompts=[[{"role": "user", "content": "p"}]] * 4, completions=completions,
        reward_model=[{"style": "rule", "ground_truth": "relu"}] * 3 + [None],
        extra_info=[{"task_id": "relu"}] * 4, trainer_state=types.SimpleNamespace(global_step=7),
        log_metric=lambda name, value: metrics.__setitem__(name, value),
        log_extra=lambda column, values: extra.__setitem__(column, values)))
    assert rewards == [4.0, 1.0, 0.0, 1.0]
    posted = [body for route, _, body in server.received if route == "POST /v1/score"]
    assert len(posted) == 3 and {body["task"] for body in posted} == {"relu"}
    ids = [body["request_id"] for body in posted]
    assert len(set(ids)) == 3 and all(i.startswith("t-") for i in ids)  # same source, other sample
    assert metrics["stitchcuda/no_program_rate"] == 0.25
    assert metrics["stitchcuda/correct_rate"] == 0.75
    assert metrics["stitchcuda/breakdown.rubric.coverage"] == 4.0
    assert extra["stitch_status"] == ["done", "done", "no_program", "done"]
    # The same samples at the same step send the same ids (a resumed run is idempotent).
    asyncio.run(reward(prompts=[None] * 4, completions=completions,
                       reward_model=[{"ground_truth": "relu"}] * 4,
                       trainer_state=types.SimpleNamespace(global_step=7)))
    again = [body["request_id"] for route, _, body in server.received[3:] if route == "POST /v1/score"]
    assert sorted(again) == sorted(ids)  # the requests go out concurrently, in any order


def test_shared_identical_programs_use_one_id(serve):
    server = serve({"POST /v1/score": [(200, {}, lambda body: reply(body["request_id"]))]})
    reward = StitchcudaReward(server.url, "tok", run_id="s", share_identical=True)
    completion = f"```cuda\n{PROGRAM}```"
    for step in (1, 2):
        rewards = asyncio.run(reward(prompts=[None] * 2, completions=[completion, completion],
                                     reward_model=[{"ground_truth": "relu"}] * 2,
                                     trainer_state=types.SimpleNamespace(global_step=step)))
        assert rewards == [2.5, 2.5]
    assert len({body["request_id"] for _, _, body in server.received}) == 1
