"""The GRPO recipe against verl 0.9.1's own config schema: config/stitchcuda_grpo.yaml composed by
Hydra over verl's ppo_trainer.yaml with the exact arguments the launch scripts pass (their
STITCHCUDA_DRY_RUN output), every key the recipe sets present in verl's schema (bar the three the
rate_limited manager and get_custom_reward_fn read with .get()), verl's validate_config passing,
the rollout and actor dataclasses instantiating, the manager's name resolving to RateLimitedRewardManager
and verl's load_reward_manager
building a RateLimitedRewardManager whose compute_score is ours.
"""

import os
import subprocess
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf
from verl.experimental.reward_loop.reward_manager.limited import RateLimitedRewardManager
from verl.trainer.ppo.reward import load_reward_manager, resolve_reward_manager_cls
from verl.trainer.ppo.utils import need_critic, need_reference_policy
from verl.utils.config import omega_conf_to_dataclass, validate_config
from verl.utils.ray_utils import get_event_loop

from conftest import INTEGRATION_DIR, SOURCE_DIR

CONFIG_DIR = INTEGRATION_DIR / "config"
# Keys the recipe adds to verl's schema, each read with .get() by verl 0.9.1's code:
# RateLimitedRewardManager.init_class/__init__ (max_concurrent, timeout) and get_custom_reward_fn
# (reward_kwargs).
ADDED_KEYS = {"reward.max_concurrent", "reward.timeout", "reward.custom_reward_function.reward_kwargs"}


def leaf_keys(tree: dict, prefix: str = "") -> list[str]:
    keys = []
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value and path not in ADDED_KEYS:
            keys += leaf_keys(value, path + ".")
        else:
            keys.append(path)
    return keys


def in_schema(config: DictConfig, key: str) -> bool:
    parent_key, _, name = key.rpartition(".")
    parent = OmegaConf.select(config, parent_key) if parent_key else config
    return isinstance(parent, DictConfig) and name in parent.keys()  # keys(): a `???` value counts too


def launch_arguments(script: str, env: dict[str, str], *extra: str) -> list[str]:
    """The trainer's arguments of a launch script (STITCHCUDA_DRY_RUN=1), without the
    interpreter, `-m verl.trainer.main_ppo` and the config path/name."""
    done = subprocess.run([str(INTEGRATION_DIR / script), *extra], capture_output=True, text=True,
                          env={**os.environ, **env, "STITCHCUDA_DRY_RUN": "1"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1:3] == ["-m", "verl.trainer.main_ppo"], lines
    assert lines[3] == f"--config-path={CONFIG_DIR}" and lines[4] == "--config-name=stitchcuda_grpo"
    return lines[5:]


def compose_recipe(overrides: list[str]) -> DictConfig:
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        return compose(config_name="stitchcuda_grpo", overrides=overrides)


@pytest.fixture(scope="module")
def verl_defaults() -> DictConfig:
    config_dir = Path(__import__("verl").__file__).parent / "trainer" / "config"
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return compose(config_name="ppo_trainer")


def test_every_recipe_key_is_in_verls_schema(verl_defaults):
    recipe = yaml.safe_load((CONFIG_DIR / "stitchcuda_grpo.yaml").read_text())
    keys = leaf_keys({k: v for k, v in recipe.items() if k not in ("defaults", "hydra")})
    assert len(keys) > 30
    unknown = [key for key in keys if key not in ADDED_KEYS and not in_schema(verl_defaults, key)]
    assert not unknown, f"not in verl 0.9.1's ppo_trainer config: {unknown}"
    assert not any(in_schema(verl_defaults, key) for key in ADDED_KEYS)
    assert in_schema(verl_defaults, "reward.custom_reward_function.path")


def check_config(config: DictConfig, tokenizer) -> None:
    validate_config(config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    assert config.algorithm.adv_estimator == "grpo" and need_reference_policy(config) and not need_critic(config)
    omega_conf_to_dataclass(config.actor_rollout_ref.rollout)
    omega_conf_to_dataclass(config.actor_rollout_ref.actor)
    assert resolve_reward_manager_cls(config) is RateLimitedRewardManager  # as RewardLoopManager resolves it
    reward_path = Path(config.reward.custom_reward_function.path)
    assert reward_path.resolve() == (INTEGRATION_DIR / "reward_fn.py").resolve()
    manager = load_reward_manager(config, tokenizer)
    assert isinstance(manager, RateLimitedRewardManager)
    assert manager.timeout == config.reward.timeout == 1920
    assert manager.timeout > config.reward.custom_reward_function.reward_kwargs.request_timeout_s + 60
    assert manager.is_async_reward_score
    # compute_score with the recipe's reward_kwargs merged in: a reply without a program is
    # answered here, with no service running.
    result = get_event_loop().run_until_complete(
        manager.compute_score(data_source="stitchcuda/generate", solution_str="no code", ground_truth="relu",
                              extra_info={"prompt_hash": "x"}))
    assert result["error_code"] == "bad_request" and result["score"] == 0.0


def test_single_node_launch_composes(tokenizer, tmp_path):
    env = {"DATA_DIR": str(tmp_path / "ds"), "MODEL_PATH": "/models/coder-32b"}
    arguments = launch_arguments("launch_single_node.sh", env)
    config = compose_recipe(arguments)
    assert config.trainer.nnodes == 1 and config.trainer.n_gpus_per_node == 8
    assert config.actor_rollout_ref.model.path == "/models/coder-32b"
    assert config.data.train_files == f"{env['DATA_DIR']}/train.parquet"
    assert config.data.val_files == f"{env['DATA_DIR']}/val.parquet"
    kwargs = config.reward.custom_reward_function.reward_kwargs
    assert kwargs.serve_urls == "http://127.0.0.1:8421"
    assert kwargs.token_file == str(SOURCE_DIR / "serve-state" / "token")
    assert config.reward.reward_manager.name == "rate_limited"
    assert config.reward.custom_reward_function.name == "compute_score"
    check_config(config, tokenizer)


def test_multi_node_launch_composes(tokenizer, tmp_path):
    env = {"ROLE": "head", "HEAD_ADDR": "10.0.0.1", "NNODES": "4", "DATA_DIR": str(tmp_path / "ds"),
           "NODE_HOSTS": "10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4",
           "STITCHCUDA_SERVE_TOKEN_FILE": str(tmp_path / "token")}
    arguments = launch_arguments("launch_multi_node.sh", env, "trainer.total_epochs=1")
    config = compose_recipe(arguments)
    assert config.trainer.nnodes == 4 and config.reward.num_workers == 32
    assert config.data.train_batch_size == 256 and config.trainer.total_epochs == 1
    kwargs = config.reward.custom_reward_function.reward_kwargs
    assert kwargs.serve_urls == ",".join(f"http://10.0.0.{k}:8421" for k in range(1, 5))
    assert kwargs.token_file == env["STITCHCUDA_SERVE_TOKEN_FILE"]
    check_config(config, tokenizer)


def test_launch_scripts_refuse_missing_settings(tmp_path):
    done = subprocess.run([str(INTEGRATION_DIR / "launch_multi_node.sh")], capture_output=True, text=True,
                          env={**os.environ, "STITCHCUDA_DRY_RUN": "1", "ROLE": "head", "HEAD_ADDR": "h",
                               "STITCHCUDA_SERVE_TOKEN_FILE": "t", "NNODES": "2", "NODE_HOSTS": "a"})
    assert done.returncode == 2 and "NODE_HOSTS has 1 hosts, NNODES is 2" in done.stderr
    done = subprocess.run([str(INTEGRATION_DIR / "launch_single_node.sh")], capture_output=True, text=True,
                          env={**os.environ, "DATA_DIR": str(tmp_path / "none")})
    assert done.returncode == 2 and "train.parquet" in done.stderr
