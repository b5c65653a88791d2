"""The Parquet files of the real `stitchcuda dataset` (over tests/dataset/data's fixture runs)
through verl 0.9.1's own RLHFDataset and collate_fn: every row loads, the chat messages come
through as `raw_prompt` and render with the tokenizer's chat template, the overlong-prompt filter
(which tokenizes through the template) keeps or drops them by length, and reward_model /
extra_info reach the batch as compute_score reads them.
"""

import json
import os
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from omegaconf import OmegaConf
from torch.utils.data import DataLoader
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

from conftest import SOURCE_DIR, binary
from stitchcuda_verl.reward import task_of

FIXTURE_RUNS = SOURCE_DIR / "tests" / "dataset" / "data"
EXTRA_INFO_KEYS = {"task_id", "task_path", "skill", "attempt", "run_dir", "reference_outcome", "prompt_hash"}


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dataset")
    command = [str(binary("STITCHCUDA_BIN")), "dataset", str(FIXTURE_RUNS / "run_relu"),
               str(FIXTURE_RUNS / "run_gemm"), "--out", str(out), "--val-fraction", "0"]
    done = subprocess.run(command, capture_output=True, text=True, env=os.environ.copy())
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "train.parquet").is_file()
    return out


def load(dataset_dir: Path, tokenizer, **config) -> RLHFDataset:
    settings = {"prompt_key": "prompt", "max_prompt_length": 8192, "filter_overlong_prompts": True,
                "filter_overlong_prompts_workers": 1, "truncation": "error", "return_raw_chat": True,
                "cache_dir": str(dataset_dir / "cache"), **config}
    return RLHFDataset(data_files=[str(dataset_dir / "train.parquet")], tokenizer=tokenizer,
                       config=OmegaConf.create(settings))


def test_rows_load_with_their_messages_and_extra_info(dataset_dir, tokenizer):
    rows = pq.read_table(dataset_dir / "train.parquet").to_pylist()
    assert len(rows) == 4  # 2 tasks × (generate, improve), as tests/dataset's CLI test counts
    dataset = load(dataset_dir, tokenizer)
    assert len(dataset) == len(rows)
    for index, row in enumerate(rows):
        item = dataset[index]
        assert item["data_source"] == row["data_source"]
        assert item["data_source"] in ("stitchcuda/generate", "stitchcuda/improve")
        assert item["ability"] == "cuda"
        assert [m["role"] for m in item["raw_prompt"]] == ["system", "user"]
        assert item["raw_prompt"] == row["prompt"]
        assert "```cuda code block" in item["raw_prompt"][0]["content"]
        assert "## Task (PyTorch)" in item["raw_prompt"][1]["content"]
        assert item["reward_model"] == {"style": "rule", "ground_truth": row["extra_info"]["task_id"]}
        assert set(item["extra_info"]) == EXTRA_INFO_KEYS
        assert item["extra_info"] == row["extra_info"]
        assert task_of(item["reward_model"]["ground_truth"], item["extra_info"]) in ("relu", "gemm")
        assert item["index"] == 0  # extra_info has no `index`: verl's default


def test_the_chat_template_renders_the_prompt(dataset_dir, tokenizer):
    item = load(dataset_dir, tokenizer)[0]
    text = tokenizer.apply_chat_template(item["raw_prompt"], add_generation_prompt=True, tokenize=False)
    system, user = (m["content"] for m in item["raw_prompt"])
    assert text == (f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
                    "<|im_start|>assistant\n")
    ids = tokenizer.apply_chat_template(item["raw_prompt"], add_generation_prompt=True, tokenize=True)
    ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
    assert tokenizer.decode(ids) == text  # byte-level: the prompt survives tokenization exactly


def test_the_length_filter_goes_through_the_template(dataset_dir, tokenizer):
    lengths = []
    for row in pq.read_table(dataset_dir / "train.parquet").to_pylist():
        ids = tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=True)
        lengths.append(len(ids["input_ids"] if hasattr(ids, "keys") else ids))
    cut = sorted(lengths)[1]  # keeps the two shortest (ties aside)
    kept = load(dataset_dir, tokenizer, max_prompt_length=cut)
    assert len(kept) == sum(length <= cut for length in lengths) and 0 < len(kept) < len(lengths)
    assert len(load(dataset_dir, tokenizer, max_prompt_length=5)) == 0


def test_a_batch_carries_what_compute_score_reads(dataset_dir, tokenizer):
    dataset = load(dataset_dir, tokenizer)
    batch = next(iter(DataLoader(dataset, batch_size=4, collate_fn=collate_fn)))
    assert list(batch["data_source"]) == [dataset[i]["data_source"] for i in range(4)]
    tasks = [task_of(rm["ground_truth"], info) for rm, info in zip(batch["reward_model"], batch["extra_info"],
                                                                 strict=True)]
    assert sorted(tasks) == ["gemm", "gemm", "relu", "relu"]
    assert len({info["prompt_hash"] for info in batch["extra_info"]}) == 4
    assert all(info["skill"] in ("generate", "improve") for info in batch["extra_info"])
    json.dumps(list(batch["extra_info"]))  # plain values (verl ships them between Ray workers)
