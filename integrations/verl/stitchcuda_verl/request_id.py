"""The idempotency key of a candidate: a hash of what identifies the sample, so a retried call (a
reward worker restarted, verl's timeout hit, the same sample scored again) gets the stored reply
from `stitchcuda serve` instead of a second verification.

The key covers the task, the program's exact text, the sample's identity from `extra_info` (the
dataset's `prompt_hash`, and a step or rollout index where the trainer adds one) and an optional
run id. verl passes every rollout of one prompt the same `extra_info`, so GRPO rollouts that wrote
byte-identical programs share a key and are verified once: the same program for the same task gets
the same verdict. Set a run id (`run_id` kwarg or STITCHCUDA_RUN_ID) to keep one training run's
stored results apart from another's.
"""

import hashlib
import json
from typing import Any

# extra_info keys that name the sample (written by `stitchcuda dataset`, or by a trainer/agent loop).
IDENTITY_KEYS = ("prompt_hash", "index", "global_step", "step", "rollout_n", "sample_index")
PREFIX = "scv1-"


def sample_identity(extra_info: Any) -> dict[str, Any]:
    if not isinstance(extra_info, dict):
        return {}
    return {key: extra_info[key] for key in IDENTITY_KEYS if extra_info.get(key) is not None}


def derive_request_id(task: str, source: str, extra_info: Any, run_id: str = "") -> str:
    """`scv1-` and 48 hex digits: within the service's limit (≤ 200 characters, no "/" or blanks)."""
    identity = {"task": task, "source": source, "sample": sample_identity(extra_info), "run": run_id}
    text = json.dumps(identity, sort_keys=True, ensure_ascii=True, default=str)
    return PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()[:48]
