"""verl's custom reward function for StitchCUDA's datasets: the program in the model's reply,
verified and scored by `stitchcuda serve` (docs/serve.md), as a dict verl's reward managers log
per key (reply.py says which keys and why).

Configure it in verl 0.9.x as

    reward.custom_reward_function.path=integrations/verl/reward_fn.py
    reward.custom_reward_function.name=compute_score
    reward.reward_manager.name=rate_limited

(integrations/verl/config/stitchcuda_grpo.yaml does). config.py lists the settings.
"""

import logging
from typing import Any

from .client import client_for
from .config import ConfigError, resolve_config, run_id_of
from .extract import extract_program
from .reply import local_result
from .request_id import derive_request_id

logger = logging.getLogger("stitchcuda_verl")


def task_of(ground_truth: Any, extra_info: Any) -> str:
    """The task id: `reward_model.ground_truth` as `stitchcuda dataset` writes it, else
    `extra_info.task_id`."""
    if isinstance(ground_truth, str) and ground_truth.strip():
        return ground_truth.strip()
    if isinstance(extra_info, dict) and isinstance(extra_info.get("task_id"), str):
        return extra_info["task_id"].strip()
    return ""


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """The reward of one reply: a dict with `score` (the reward verl trains on) and the service's
    verdict, always with the same keys (reply.RESULT_KEYS). Never raises: a reply without a program,
    a bad setting or an unreachable service is a result with score 0 that says why."""
    task = task_of(ground_truth, extra_info)
    extraction = extract_program(solution_str or "")
    request_id = derive_request_id(task, extraction.program or solution_str or "", extra_info, run_id_of(kwargs))
    if extraction.program is None:  # answered here: nothing to verify, no configuration needed
        return local_result(request_id, "rejected", "bad_request", f"no program: {extraction.reason}")
    if not task:
        return local_result(request_id, "rejected", "bad_request",
                            "no task id (reward_model.ground_truth or extra_info.task_id)")
    try:
        return await client_for(resolve_config(kwargs)).score(request_id, task, extraction.program)
    except ConfigError as error:
        logger.error("stitchcuda reward: %s", error)
        return local_result(request_id, "error", "infrastructure_error", f"configuration: {error}")
    except Exception as error:  # a bug here must not take verl's batch down; CancelledError passes
        logger.exception("stitchcuda reward: scoring failed (data_source=%s, task=%s)", data_source, task)
        return local_result(request_id, "error", "infrastructure_error", f"{type(error).__name__}: {error}")
