#!/usr/bin/env python3
"""GRPO with TRL on a `stitchcuda dataset` folder, rewards from `stitchcuda serve`.

    python integrations/trl/train_grpo.py --dataset DS --model MODEL --serve-url http://127.0.0.1:8421 \\
        --output-dir out/grpo [--num-generations 8 --prompts-per-step 4 --max-steps 100 ...]

DS holds train.parquet (docs/dataset.md); MODEL is a local model folder (save_pretrained) with a
chat template. The token is --token-file, else $STITCH_SERVE_TOKEN. Each step samples
--prompts-per-step prompts × --num-generations completions (across all processes), scores them
through the service (integrations/trl/stitchcuda_reward.py) and takes one GRPO step.
--metrics-file gets one JSON line per step: TRL's logged values plus, from the scores themselves,
the reward mean and the mean within-group reward variance. Multi-GPU: run under `accelerate launch`.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stitchcuda_reward import StitchcudaReward  # noqa: E402
import stitchcuda_client  # noqa: E402  (put on the path by stitchcuda_reward)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="GRPO (TRL) over a `stitchcuda dataset` folder with rewards from `stitchcuda serve`.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--dataset", required=True, help="folder with train.parquet (stitchcuda dataset --out)")
    parser.add_argument("--model", required=True, help="local model folder (config, weights, tokenizer)")
    parser.add_argument("--serve-url", required=True, help="the service, e.g. http://127.0.0.1:8421")
    parser.add_argument("--token-file", help="bearer token file (default $STITCH_SERVE_TOKEN)")
    parser.add_argument("--output-dir", required=True, help="checkpoints and logs")
    parser.add_argument("--run-id", help="prefix of request ids (default: the output folder's name)")
    parser.add_argument("--num-generations", type=int, default=8, help="completions per prompt (the group)")
    parser.add_argument("--prompts-per-step", type=int, default=4, help="prompts per optimizer step")
    parser.add_argument("--max-steps", type=int, default=100, help="optimizer steps")
    parser.add_argument("--learning-rate", type=float, default=1e-6)
    parser.add_argument("--beta", type=float, default=0.0, help="KL coefficient (0: no reference model)")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--max-completion-length", type=int, default=4096, help="tokens")
    parser.add_argument("--max-prompt-tokens", type=int, default=0,
                        help="drop samples whose templated prompt is longer (0: keep all)")
    parser.add_argument("--repeat-dataset", type=int, default=1,
                        help="use every row this many times (smoke runs on a few prompts)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dtype", choices=["auto", "float32", "bfloat16", "float16"], default="auto",
                        help="weights' dtype when loading the model")
    parser.add_argument("--bf16", action="store_true", help="bf16 mixed precision (GPU)")
    parser.add_argument("--cpu", action="store_true", help="train on the CPU (tests)")
    parser.add_argument("--gradient-checkpointing", action="store_true")
    parser.add_argument("--request-timeout", type=float, default=1800.0, help="seconds per candidate")
    parser.add_argument("--share-identical", action="store_true",
                        help="verify each distinct program once per run; its copies share the reward")
    parser.add_argument("--concurrency", type=int, default=64, help="requests in flight per process")
    parser.add_argument("--save-steps", type=int, default=0, help="checkpoint every N steps (0: at the end only)")
    parser.add_argument("--no-save", action="store_true", help="do not save the trained model")
    parser.add_argument("--metrics-file", help="JSON lines, one per step (default OUTPUT_DIR/metrics.jsonl)")
    parser.add_argument("--report-to", default="none", help="TRL/transformers report_to (none, wandb, ...)")
    args = parser.parse_args(argv)
    for name in ("num_generations", "prompts_per_step", "max_steps", "max_completion_length",
                 "repeat_dataset"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.num_generations < 2:
        parser.error("--num-generations must be at least 2 (GRPO compares completions of a group)")
    train = os.path.join(args.dataset, "train.parquet")
    if not os.path.isfile(train):
        parser.error(f"{train}: not found (make it with `stitchcuda dataset RUN_DIRS --out {args.dataset}`)")
    if not os.path.isdir(args.model):
        parser.error(f"--model {args.model}: not a folder")
    return args


def group_variances(rewards: list[float], group: int) -> list[float]:
    """Population variance of each consecutive group (TRL repeats a prompt num_generations times
    in a row, so a group is a prompt's completions)."""
    return [statistics.pvariance(rewards[i:i + group]) for i in range(0, len(rewards) - group + 1, group)]


def load_train_dataset(args, tokenizer):
    from datasets import concatenate_datasets, load_dataset
    dataset = load_dataset("parquet", data_files={"train": os.path.join(args.dataset, "train.parquet")},
                           split="train")
    if len(dataset) == 0:
        raise SystemExit(f"error: {args.dataset}/train.parquet has no rows")
    if args.repeat_dataset > 1:
        dataset = concatenate_datasets([dataset] * args.repeat_dataset)
    if args.max_prompt_tokens > 0:
        before = len(dataset)
        def prompt_tokens(row) -> int:
            text = tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=False)
            return len(tokenizer(text, add_special_tokens=False)["input_ids"])

        dataset = dataset.filter(lambda row: prompt_tokens(row) <= args.max_prompt_tokens)
        print(f"kept {len(dataset)} of {before} prompts within {args.max_prompt_tokens} tokens", flush=True)
        if len(dataset) == 0:
            raise SystemExit("error: no prompt fits --max-prompt-tokens")
    return dataset


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    token = stitchcuda_client.read_token(token_file=args.token_file)
    client = stitchcuda_client.ServeClient(args.serve_url, token, request_timeout_s=args.request_timeout)
    if not client.healthy():
        raise SystemExit(f"error: {args.serve_url}/healthz is not ok: is `stitchcuda serve` running?")
    run_id = args.run_id or os.path.basename(os.path.normpath(args.output_dir)) or "trl"
    reward = StitchcudaReward(args.serve_url, run_id=run_id, concurrency=args.concurrency,
                              share_identical=args.share_identical, client=client)

    tokenizer = AutoTokenizer.from_pretrained(args.model)
    if tokenizer.chat_template is None:
        raise SystemExit(f"error: {args.model}: the tokenizer has no chat template (the prompts are chat messages)")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    dtype = "auto" if args.dtype == "auto" else getattr(torch, args.dtype)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype)
    dataset = load_train_dataset(args, tokenizer)

    world = int(os.environ.get("WORLD_SIZE", "1"))
    completions = args.prompts_per_step * args.num_generations
    if completions % world:
        raise SystemExit(f"error: {completions} completions per step do not split over {world} processes")
    config = GRPOConfig(
        output_dir=args.output_dir, seed=args.seed, max_steps=args.max_steps,
        learning_rate=args.learning_rate, beta=args.beta, temperature=args.temperature,
        num_generations=args.num_generations, per_device_train_batch_size=completions // world,
        gradient_accumulation_steps=1, steps_per_generation=1,
        max_completion_length=args.max_completion_length, logging_steps=1,
        save_strategy="steps" if args.save_steps else "no", save_steps=args.save_steps or 500,
        report_to=args.report_to, use_cpu=args.cpu, bf16=args.bf16 and not args.cpu,
        gradient_checkpointing=args.gradient_checkpointing, dataloader_num_workers=0,
        disable_tqdm=not sys.stderr.isatty(),  # a bar in a log file hides the step lines
        remove_unused_columns=False)

    metrics_path = args.metrics_file or os.path.join(args.output_dir, "metrics.jsonl")
    os.makedirs(os.path.dirname(os.path.abspath(metrics_path)), exist_ok=True)
    started = time.monotonic()

    class StepMetrics(TrainerCallback):
        """One line per logged step: TRL's values (over all processes), and the reward statistics
        of the main process's scores of that step."""

        def on_log(self, _args, state, _control, logs=None, **_kwargs):
            if not state.is_world_process_zero or not logs or "loss" not in logs or not reward.history:
                return
            scores = reward.history[-1]
            rewards = [s.reward for s in scores]
            line = {"step": state.global_step, "elapsed_s": round(time.monotonic() - started, 1),
                    "completions": len(rewards), "reward_mean": statistics.fmean(rewards),
                    "within_group_variance": statistics.fmean(group_variances(rewards, args.num_generations)),
                    **stitchcuda_client.summarize(scores),
                    "trl": {k: v for k, v in logs.items() if isinstance(v, (int, float))}}
            with open(metrics_path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(line) + "\n")
            print("step {step}: reward mean {reward_mean:.3f}, within-group variance "
                  "{within_group_variance:.3f}, correct {correct_rate:.2f}".format(**line), flush=True)

    trainer = GRPOTrainer(model=model, reward_funcs=[reward], args=config, train_dataset=dataset,
                          processing_class=tokenizer, callbacks=[StepMetrics()])
    trainer.train()
    if not args.no_save:
        trainer.save_model(args.output_dir)
    print(f"done: {trainer.state.global_step} steps in {time.monotonic() - started:.0f} s; "
          f"metrics in {metrics_path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
