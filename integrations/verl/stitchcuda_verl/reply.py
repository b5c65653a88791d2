"""What compute_score returns: the service's reply (docs/serve.md "Reply keys") flattened into one
dict with the same keys for every sample, whatever happened to it.

verl needs both properties. Its reward loop builds each extra key's column from the keys of the
batch's *first* sample (`reward_extra_keys = list(reward_extra_infos[0].keys())`, then
`info[key]` for every sample), so a key one sample lacks is a KeyError for the whole batch; and its
validation metrics (`process_validation_metrics`) average every key whose values are not strings,
after dropping None. So: booleans are 0.0/1.0 (their mean is a rate), a number the service does not
know (speedup of a wrong program, the rubric of the fake scorer) is None rather than NaN (a NaN
would make the key's mean NaN), and codes and messages are strings (logged per sample, skipped by
the metrics).
"""

from typing import Any

# The keys of every result, in order. `score` is what verl puts in the reward tensor.
RESULT_KEYS = (
    "score",
    "reward",
    "status",
    "error_code",
    "compiled",
    "correct",
    "hacked",
    "speedup",
    "candidate_ms",
    "baseline_ms",
    "rule_reward",
    "shaping",
    "rubric_anti_hacking",
    "rubric_cuda_engineering",
    "rubric_operator_coverage",
    "rubric_skill_compliance",
    "queued_s",
    "scoring_s",
    "message",
    "request_id",
    "endpoint",
)

RUBRIC_DIMENSIONS = ("anti_hacking", "cuda_engineering", "operator_coverage", "skill_compliance")
MESSAGE_CHARS = 300


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _flag(value: Any) -> float:
    return 1.0 if value is True else 0.0


def _breakdown_terms(breakdown: Any) -> dict[str, float | None]:
    """The reward's terms, from src/reward's breakdown (rule_reward, shaping, rubric.scores) or the
    fake scorer's (rule, no rubric); None where the breakdown has no such term."""
    terms: dict[str, float | None] = {"rule_reward": None, "shaping": None}
    terms.update({f"rubric_{d}": None for d in RUBRIC_DIMENSIONS})
    if not isinstance(breakdown, dict):
        return terms
    terms["rule_reward"] = _number(breakdown.get("rule_reward", breakdown.get("rule")))
    terms["shaping"] = _number(breakdown.get("shaping"))
    rubric = breakdown.get("rubric")
    scores = rubric.get("scores") if isinstance(rubric, dict) else None
    if isinstance(scores, dict):
        for dimension in RUBRIC_DIMENSIONS:
            one = scores.get(dimension)
            terms[f"rubric_{dimension}"] = _number(one.get("score")) if isinstance(one, dict) else None
    return terms


def flatten_reply(reply: dict[str, Any], endpoint: str) -> dict[str, Any]:
    """The service's reply as compute_score's result. The score is the reward of a `done` reply
    and 0 otherwise (an error, a timeout or a refusal says nothing good about the program)."""
    status = str(reply.get("status", "error"))
    reward = _number(reply.get("reward")) or 0.0
    runtimes = reply.get("runtimes") if isinstance(reply.get("runtimes"), dict) else {}
    result: dict[str, Any] = {
        "score": reward if status == "done" else 0.0,
        "reward": reward,
        "status": status,
        "error_code": str(reply.get("error_code", "infrastructure_error")),
        "compiled": _flag(reply.get("compiled")),
        "correct": _flag(reply.get("correct")),
        "hacked": _flag(reply.get("hacked")),
        "speedup": _number(reply.get("speedup")),
        "candidate_ms": _number(runtimes.get("candidate_ms")),
        "baseline_ms": _number(runtimes.get("baseline_ms")),
        **_breakdown_terms(reply.get("breakdown")),
        "queued_s": _number(reply.get("queued_s")) or 0.0,
        "scoring_s": _number(reply.get("scoring_s")) or 0.0,
        "message": str(reply.get("message", ""))[:MESSAGE_CHARS],
        "request_id": str(reply.get("request_id", "")),
        "endpoint": endpoint,
    }
    assert tuple(result) == RESULT_KEYS
    return result


def local_result(request_id: str, status: str, error_code: str, message: str) -> dict[str, Any]:
    """A result made here, without a reply from the service: no program in the reply
    (status rejected, error_code bad_request: the service's code for a body that is no candidate)
    or no healthy service (status error, error_code infrastructure_error)."""
    return flatten_reply(
        {"request_id": request_id, "status": status, "error_code": error_code, "message": message},
        endpoint="",
    )
