"""An async reward function for TRL's GRPOTrainer that scores completions with `stitchcuda serve`.

    reward = StitchcudaReward("http://127.0.0.1:8421", token=..., run_id="grpo-run-1")
    GRPOTrainer(model=..., reward_funcs=[reward], train_dataset=load_dataset("parquet", ...))

The dataset is what `stitchcuda dataset` writes (docs/dataset.md): a conversational `prompt`, and
`reward_model.ground_truth` (else `extra_info.task_id`) naming the task the service verifies
against. For each completion the program is extracted (integrations/common/stitchcuda_client.py),
sent under an id derived from the task, the program and the sample's identity (run id, trainer
step, process, index), and the service's reward returned; a completion without a program, or one
the service could not score, gets 0. Per batch it logs, through TRL's `log_metric`, the outcome
rates and breakdown means (stitchcuda/correct_rate, stitchcuda/breakdown.shaping, ...) and,
through `log_extra`, per-completion columns of the completions table (status, error code, speedup).
"""
from __future__ import annotations

import asyncio
import logging
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import stitchcuda_client  # noqa: E402  (integrations/common, beside this folder)
from stitchcuda_client import Score, ServeClient, extract_program, request_id_for  # noqa: E402

logger = logging.getLogger("stitchcuda.trl")


def completion_text(completion) -> str:
    """A conversational completion is a list of messages; a standard one is a string."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "".join(str(message.get("content") or "") for message in completion
                       if isinstance(message, dict) and message.get("role", "assistant") == "assistant")
    return ""


def task_of(reward_model, extra_info) -> str | None:
    if isinstance(reward_model, dict) and reward_model.get("ground_truth"):
        return str(reward_model["ground_truth"])
    if isinstance(extra_info, dict) and extra_info.get("task_id"):
        return str(extra_info["task_id"])
    return None


class StitchcudaReward:
    """The reward function (an async callable, which TRL runs on its event loop). Its name in
    TRL's logs is `stitchcuda` (rewards/stitchcuda/mean)."""

    __name__ = "stitchcuda"

    def __init__(self, url: str, token: str | None = None, *, run_id: str = "trl",
                 concurrency: int = 64, request_timeout_s: float = 1800.0,
                 poll_interval_s: float = 1.0, share_identical: bool = False,
                 client: ServeClient | None = None):
        self.client = client or ServeClient(url, token, request_timeout_s=request_timeout_s,
                                            poll_interval_s=poll_interval_s)
        self.run_id = run_id
        # With share_identical, a sample's identity is the run alone: the same program for the same
        # task is verified once per run and every copy gets that reward (fewer verifications when a
        # policy repeats itself; its timing is measured once).
        self.share_identical = share_identical
        self.concurrency = concurrency
        self.history: list[list[Score]] = []  # every batch's scores, for scripts that report

    async def __call__(self, prompts, completions, completion_ids=None, *, reward_model=None,
                       extra_info=None, trainer_state=None, log_metric=None, log_extra=None,
                       **_columns) -> list[float]:
        count = len(completions)
        reward_models = reward_model or [None] * count
        extra_infos = extra_info or [None] * count
        step = getattr(trainer_state, "global_step", 0)
        process = os.environ.get("RANK", "0")
        semaphore = asyncio.Semaphore(self.concurrency)

        async def one(index: int) -> Score:
            task = task_of(reward_models[index], extra_infos[index])
            if task is None:
                return Score.unscored("no_program", "bad_request",
                                      "the sample names no task (reward_model.ground_truth)")
            source = extract_program(completion_text(completions[index]))
            if source is None:
                return Score.unscored("no_program", "none", "no ```cuda block in the completion")
            sample = self.run_id if self.share_identical else f"{self.run_id}/{step}/{process}/{index}"
            request_id = request_id_for(task, source, sample, prefix=self.run_id)
            async with semaphore:
                return await self.client.score_async(task, source, request_id)

        scores = list(await asyncio.gather(*(one(i) for i in range(count))))
        self.history.append(scores)
        metrics = stitchcuda_client.summarize(scores)
        if log_metric is not None:
            for name, value in metrics.items():
                log_metric(f"stitchcuda/{name}", value)
        if log_extra is not None:
            log_extra("stitch_status", [s.status for s in scores])
            log_extra("stitch_error_code", [s.error_code for s in scores])
            log_extra("stitch_speedup", [s.speedup if s.speedup is not None else float("nan")
                                         for s in scores])
        logger.info("step %s: %d completions, reward mean %.3f, correct %.2f, no program %.2f",
                    step, count, metrics["reward_mean"], metrics["correct_rate"],
                    metrics["no_program_rate"])
        return [s.reward for s in scores]
