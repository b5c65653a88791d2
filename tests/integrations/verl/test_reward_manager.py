"""compute_score through verl 0.9.1's own `rate_limited` reward manager, loaded the way verl loads
it (`load_reward_manager` over `reward.custom_reward_function.{path,name}`), against a real
`stitchcuda-serve --fake-scorer`: the scores land in the reward tensor at each response's last
token, the service's verdict comes back per key, every result has the same keys (verl builds its
columns from the first sample's keys), and the no-program, failover, no-healthy-endpoint, 429 and
retry cases. Also the extraction, the request id and the own-node-first order on their own.
"""

import asyncio
import math
import time

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from verl import DataProto
from verl.experimental.reward_loop.reward_manager.limited import RateLimitedRewardManager
from verl.trainer.ppo.reward import load_reward_manager
from verl.utils.ray_utils import get_event_loop

from conftest import INTEGRATION_DIR, free_port
from stitchcuda_verl import compute_score
from stitchcuda_verl.endpoints import prefer_local
from stitchcuda_verl.extract import extract_program
from stitchcuda_verl.reply import RESULT_KEYS
from stitchcuda_verl.request_id import derive_request_id

HEADER = '#include <stitch/program.h>\nextern "C" int stitch_forward(void* state) { return 0; }\n'


def program(marker: str) -> str:
    return f"// {marker}\n{HEADER}"


def reply(text: str) -> str:
    return f"Here is the program.\n```cuda\n{text}```\nIt fuses the ReLU."


def extra_info(n: int, task: str = "relu") -> dict:
    return {"task_id": task, "task_path": f"/runs/{task}/task.py", "skill": "generate", "attempt": 1,
            "run_dir": f"/runs/{task}", "reference_outcome": "passed", "prompt_hash": f"hash{n}"}


def run(coroutine):
    """On the loop verl's managers use: the manager's class-level semaphore binds to one loop."""
    return get_event_loop().run_until_complete(coroutine)


def make_batch(tokenizer, responses: list[str], tasks: list[str]) -> DataProto:
    """A batch as verl's rollout leaves it: left-padded prompts, right-padded responses of different
    lengths, attention_mask over both; the dataset's non-tensor columns."""
    prompt_ids = tokenizer("<|im_start|>user\nwrite it<|im_end|>\n", add_special_tokens=False)["input_ids"]
    encoded = [tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id] for text in responses]
    width = max(len(ids) for ids in encoded) + 3
    pad = tokenizer.pad_token_id
    response_rows, mask_rows = [], []
    for ids in encoded:
        response_rows.append(ids + [pad] * (width - len(ids)))
        mask_rows.append([1] * len(prompt_ids) + [1] * len(ids) + [0] * (width - len(ids)))
    n = len(responses)
    tensors = {
        "prompts": torch.tensor([prompt_ids] * n),
        "responses": torch.tensor(response_rows),
        "attention_mask": torch.tensor(mask_rows),
    }
    non_tensors = {
        "data_source": np.array(["stitchcuda/generate"] * n, dtype=object),
        "reward_model": np.array([{"style": "rule", "ground_truth": task} for task in tasks], dtype=object),
        "extra_info": np.array([extra_info(i, task) for i, task in enumerate(tasks)], dtype=object),
    }
    return DataProto.from_dict(tensors=tensors, non_tensors=non_tensors)


def make_manager(tokenizer, **reward_kwargs) -> RateLimitedRewardManager:
    config = OmegaConf.create({
        "reward": {
            "custom_reward_function": {"path": str(INTEGRATION_DIR / "reward_fn.py"), "name": "compute_score",
                                       "reward_kwargs": reward_kwargs},
            "reward_manager": {"source": "register", "name": "rate_limited", "module": {"path": None}},
            "max_concurrent": 8,
            "timeout": 120,
        }
    })
    manager = load_reward_manager(config, tokenizer)
    assert isinstance(manager, RateLimitedRewardManager)
    return manager


def response_ends(batch: DataProto) -> list[int]:
    width = batch.batch["responses"].shape[1]
    return [int(row[-width:].sum()) - 1 for row in batch.batch["attention_mask"]]


def test_extraction_takes_the_last_closed_cuda_block():
    two = "```cuda\nfirst\n```\ntext\n```python\nprint()\n```\n```c++\nsecond\n```\n"
    assert extract_program(two).program == "second\n"
    assert extract_program("```cpp\nx\n```").program == "x\n"
    assert extract_program("```cuda\nint x;\n").program is None  # cut off: no closing fence
    assert "cut off" in extract_program("```cuda\nint x;\n").reason
    assert extract_program("```\nint x;\n```").program is None  # unlabelled
    assert extract_program("```python\nx = 1\n```").program is None
    assert "no fenced" in extract_program("just prose").reason
    assert extract_program("").reason == "the reply is empty"


def test_request_id_is_deterministic_and_names_the_sample():
    one = derive_request_id("relu", "src", {"prompt_hash": "a", "task_id": "relu"})
    assert one == derive_request_id("relu", "src", {"prompt_hash": "a", "task_id": "other"})  # not identity
    assert one != derive_request_id("relu", "src ", {"prompt_hash": "a"})
    assert one != derive_request_id("relu", "src", {"prompt_hash": "b"})
    assert one != derive_request_id("gemm", "src", {"prompt_hash": "a"})
    assert one != derive_request_id("relu", "src", {"prompt_hash": "a"}, run_id="run2")
    assert one != derive_request_id("relu", "src", {"prompt_hash": "a", "global_step": 3})
    assert len(one) <= 200 and "/" not in one and " " not in one


def test_the_nodes_own_instance_comes_first():
    # Address literals only: nothing is resolved over the network, nothing is sent.
    remote, other = "http://10.255.255.1:8421", "http://10.255.255.2:8421"
    urls = (remote, "http://127.0.0.1:8421", other, "http://localhost:9")
    assert prefer_local(urls) == ["http://127.0.0.1:8421", "http://localhost:9", remote, other]
    assert prefer_local((remote, other), node_host="10.255.255.2") == [other, remote]


def test_scores_land_in_the_reward_tensor(start_serve, token_file, tokenizer):
    serve = start_serve("--workers", "2")
    responses = [
        reply(program("FAKE_SPEEDUP=2.0")),  # correct, 2x: rule reward min(5, 1 + 2) = 3
        reply(program("FAKE_WRONG")),
        "I would call torch.relu here.",  # no program: never sent
        reply(program("FAKE_HACKED")),
        # two blocks, the last wins: correct, 3x → 4
        "First try:\n```cuda\n" + program("FAKE_WRONG") + "```\nFixed:\n```cuda\n" + program("FAKE_SPEEDUP=3.0")
        + "```\n",
        reply(program("FAKE_SPEEDUP=9.0")),  # clipped at Rmax = 5
    ]
    batch = make_batch(tokenizer, responses, ["relu", "relu", "relu", "gemm", "gemm", "relu"])
    manager = make_manager(tokenizer, serve_urls=serve.url, token_file=str(token_file))
    out = manager(batch, return_dict=True)
    rewards, info = out["reward_tensor"], out["reward_extra_info"]

    expected = [3.0, 0.0, 0.0, 0.0, 4.0, 5.0]
    ends = response_ends(batch)
    assert len(set(ends)) > 1  # the rows end at different positions
    for row, (end, score) in enumerate(zip(ends, expected, strict=True)):
        assert rewards[row, end].item() == pytest.approx(score), row
        assert rewards[row].abs().sum().item() == pytest.approx(score), row  # nowhere else
    assert set(info) == set(RESULT_KEYS)
    assert all(len(values) == len(responses) for values in info.values())
    assert info["status"] == ["done", "done", "rejected", "done", "done", "done"]
    assert info["error_code"] == ["none", "wrong", "bad_request", "hacked", "none", "none"]
    assert info["correct"] == [1.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    assert info["compiled"] == [1.0, 1.0, 0.0, 1.0, 1.0, 1.0]
    assert info["hacked"] == [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    assert info["speedup"][0] == pytest.approx(2.0) and info["speedup"][4] == pytest.approx(3.0)
    assert info["speedup"][1] is None and info["speedup"][2] is None  # unknown: None, not NaN
    assert info["candidate_ms"][0] == pytest.approx(0.5)
    assert info["rule_reward"][0] == pytest.approx(3.0) and info["rule_reward"][5] == pytest.approx(10.0)
    assert info["rubric_anti_hacking"] == [None] * 6  # the fake scorer has no rubric
    assert "no program" in info["message"][2] and "no fenced" in info["message"][2]
    assert info["endpoint"] == [serve.url, serve.url, "", serve.url, serve.url, serve.url]
    assert all(rid.startswith("scv1-") for rid in info["request_id"])
    # What verl's reward loop does with the results: one column per key of the first sample.
    columns = {key: np.array([info[key][i] for i in range(len(responses))]) for key in info}
    assert columns["score"].dtype == np.float64
    # The rejected sample never reached the service: five accepted.
    assert "stitchcuda_serve_accepted_total 5" in serve.metrics()


def test_reward_loop_path_has_consistent_keys(start_serve, token_file, tokenizer):
    """RewardLoopWorker's path: run_single per sample, then the manager's assemble_rm_scores and
    the reward loop's `info[key] for key in first.keys()` (a missing key would be a KeyError)."""
    serve = start_serve()
    responses = ["no code at all", reply(program("FAKE_SPEEDUP=1.0")), reply(program("FAKE_COMPILE_ERROR"))]
    batch = make_batch(tokenizer, responses, ["relu"] * 3)
    manager = make_manager(tokenizer, serve_urls=serve.url, token_file=str(token_file))

    async def run_all():
        return await asyncio.gather(*(manager.run_single(batch[i : i + 1]) for i in range(len(batch))))

    outputs = run(run_all())
    scores = [output["reward_score"] for output in outputs]
    assert scores == [0.0, 2.0, 0.0]
    infos = [output["reward_extra_info"] for output in outputs]
    keys = list(infos[0].keys())
    assert keys == list(RESULT_KEYS)
    columns = {key: np.array([info[key] for info in infos]) for key in keys}
    assert list(columns["error_code"]) == ["bad_request", "none", "compile_error"]
    rm_scores = RateLimitedRewardManager.assemble_rm_scores(batch, scores)
    for row, end in enumerate(response_ends(batch)):
        assert rm_scores[row, end].item() == pytest.approx(scores[row])


def test_a_repeated_sample_gets_the_stored_result(start_serve, token_file):
    serve = start_serve("--fake-sleep-ms", "50")
    kwargs = {"serve_urls": serve.url, "token_file": str(token_file)}
    text = reply(program("FAKE_SPEEDUP=1.5"))

    first = run(compute_score("stitchcuda/generate", text, "relu", extra_info(7), **kwargs))
    second = run(compute_score("stitchcuda/generate", text, "relu", extra_info(7), **kwargs))
    other = run(compute_score("stitchcuda/generate", text, "relu", extra_info(8), **kwargs))
    assert first == second  # the same request id: the stored reply, timings included
    assert other["request_id"] != first["request_id"] and other["score"] == pytest.approx(2.5)
    assert "stitchcuda_serve_accepted_total 2" in serve.metrics()


def test_fails_over_to_a_healthy_endpoint(start_serve, token_file, tokenizer):
    serve = start_serve()
    dead = f"http://127.0.0.1:{free_port()}"
    batch = make_batch(tokenizer, [reply(program("FAKE_SPEEDUP=1.0"))] * 2, ["relu", "gemm"])
    manager = make_manager(tokenizer, serve_urls=f"{dead},{serve.url}", token_file=str(token_file),
                           health_ttl_s=60)
    out = manager(batch, return_dict=True)
    assert out["reward_extra_info"]["score"] == [2.0, 2.0]
    assert out["reward_extra_info"]["endpoint"] == [serve.url, serve.url]


def test_no_healthy_endpoint_is_a_clear_error(token_file, tokenizer):
    dead = [f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"]
    batch = make_batch(tokenizer, [reply(program("FAKE_SPEEDUP=1.0"))], ["relu"])
    manager = make_manager(tokenizer, serve_urls=",".join(dead), token_file=str(token_file),
                           unavailable_wait_s=1.5, health_ttl_s=0.5)
    started = time.monotonic()
    out = manager(batch, return_dict=True)
    elapsed = time.monotonic() - started
    info = out["reward_extra_info"]
    assert out["reward_tensor"].abs().sum().item() == 0.0
    assert info["status"] == ["error"] and info["error_code"] == ["infrastructure_error"]
    assert "no healthy stitchcuda serve endpoint" in info["message"][0]
    assert all(url in info["message"][0] for url in dead)
    assert 1.5 <= elapsed < 30, elapsed
    assert set(info) == set(RESULT_KEYS)


def test_a_wrong_token_is_refused_and_a_missing_token_file_reported(start_serve, tmp_path):
    serve = start_serve()
    wrong = tmp_path / "wrong-token"
    wrong.write_text("not-the-token\n")
    refused = run(compute_score("stitchcuda/generate", reply(program("FAKE_SPEEDUP=1.0")), "relu",
                                extra_info(1), serve_urls=serve.url, token_file=str(wrong)))
    missing = run(compute_score("stitchcuda/generate", reply(program("x")), "relu", extra_info(1),
                                serve_urls=serve.url, token_file=str(tmp_path / "absent")))
    assert refused["status"] == "rejected" and refused["error_code"] == "unauthorized"
    assert refused["score"] == 0.0
    assert missing["error_code"] == "infrastructure_error" and "token file" in missing["message"]


def test_queue_full_is_retried_after_retry_after(start_serve, token_file, tokenizer):
    """A one-slot queue and one slow worker: most of 6 concurrent requests get 429 at first; each
    comes back after Retry-After and all are scored."""
    serve = start_serve("--workers", "1", "--queue", "1", "--fake-sleep-ms", "150", "--retry-after", "1")
    responses = [reply(program(f"FAKE_SPEEDUP={k}.0")) for k in range(1, 7)]
    batch = make_batch(tokenizer, responses, ["relu"] * 6)
    manager = make_manager(tokenizer, serve_urls=serve.url, token_file=str(token_file))
    out = manager(batch, return_dict=True)
    assert out["reward_extra_info"]["status"] == ["done"] * 6
    assert out["reward_extra_info"]["score"] == [min(5.0, 1.0 + k) for k in range(1, 7)]
    metrics = serve.metrics()
    refused = [line for line in metrics.splitlines() if line.startswith('stitchcuda_serve_refused_total{reason="queue_full"}')]
    assert refused and int(refused[0].split()[-1]) > 0, metrics
    assert not any(math.isnan(value) for value in out["reward_extra_info"]["score"])
