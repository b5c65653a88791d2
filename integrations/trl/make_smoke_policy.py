#!/usr/bin/env python3
"""Builds the small policy of the GRPO smoke run (scripts/grpo_smoke.sh): a randomly initialised
Llama-shaped causal LM, briefly trained here on the CPU to answer the dataset's prompts with one of
the given programs (each equally likely), so that sampling at temperature 1 gives a mix of the
programs — some correct, some not — and their mutations, and GRPO's groups have reward variance.

    python integrations/trl/make_smoke_policy.py --dataset DS --out .smoke/policy \\
        --program integrations/trl/smoke/scale_shift_relu.cu \\
        --program integrations/trl/smoke/scale_shift_relu_wrong.cu \\
        --tokenizer-gguf SmolLM2-135M-Instruct.Q4_1.gguf      # its tokenizer, its config's shape
    ... --bpe-vocab 400                                         # or: a small BPE trained on the text (tests)

The model keeps the tokenizer's vocabulary (SmolLM2's 49k tokens dominate its size) and takes the
layer count and widths given here; it is saved in fp16 with the tokenizer and a ChatML template.
policy.json in --out records the shape, size, loss and a sampling check: how many of --samples
completions at temperature 1 reproduce each program exactly.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from stitchcuda_client import extract_program  # noqa: E402

CHATML = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
          "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--dataset", required=True, help="folder with train.parquet (stitchcuda dataset)")
    parser.add_argument("--program", action="append", required=True,
                        help="a program the policy learns to answer with (repeatable)")
    parser.add_argument("--out", required=True, help="output model folder")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--tokenizer-gguf", help="a GGUF whose tokenizer and config the policy takes")
    source.add_argument("--bpe-vocab", type=int, help="train a byte-level BPE of this size on the text")
    parser.add_argument("--train-prompts", type=int, default=1,
                        help="train on the first N prompts (0: all); prompts of one task differ little")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--kv-heads", type=int, default=1)
    parser.add_argument("--intermediate", type=int, default=256)
    parser.add_argument("--steps", type=int, default=400, help="most optimizer steps")
    parser.add_argument("--max-minutes", type=float, default=5.0, help="stop training after this long")
    parser.add_argument("--target-loss", type=float, default=0.01,
                        help="stop once the mean loss per token is below this (beyond the forks)")
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--negatives", type=int, default=2048,
                        help="random vocabulary entries scored per step besides the programs' tokens "
                             "(0: the whole vocabulary every step)")
    parser.add_argument("--full-steps", type=int, default=5,
                        help="final steps over the whole vocabulary")
    parser.add_argument("--samples", type=int, default=8, help="completions of the sampling check (0: none)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (0: torch's default; more oversubscribe a shared machine)")
    args = parser.parse_args(argv)
    for path in args.program:
        if not os.path.isfile(path):
            parser.error(f"--program {path}: not found")
    if not os.path.isfile(os.path.join(args.dataset, "train.parquet")):
        parser.error(f"{args.dataset}/train.parquet: not found")
    if args.hidden % args.heads or args.heads % args.kv_heads:
        parser.error("--hidden must divide by --heads, and --heads by --kv-heads")
    return args


def reply_text(program: str) -> str:
    """The answer the dataset's system prompt asks for: the program in one ```cuda block."""
    return "```cuda\n" + program + ("" if program.endswith("\n") else "\n") + "```"


def load_tokenizer(args, corpus: list[str]):
    from transformers import AutoTokenizer, PreTrainedTokenizerFast
    if args.tokenizer_gguf:
        folder, name = os.path.split(os.path.abspath(args.tokenizer_gguf))
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    else:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
        bpe = Tokenizer(models.BPE())
        bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        bpe.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=args.bpe_vocab, special_tokens=SPECIAL,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        bpe.train_from_iterator(corpus, trainer)
        tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe)
    # The GGUF's own special-token map is unreliable (its eos reads <|im_start|>); ChatML's are
    # set here, in both cases, so generation stops at the end of the assistant's message.
    tokenizer.add_special_tokens({"eos_token": "<|im_end|>", "bos_token": "<|im_start|>",
                                  "pad_token": "<|endoftext|>", "unk_token": "<|endoftext|>"})
    tokenizer.chat_template = CHATML
    tokenizer.clean_up_tokenization_spaces = False  # it would strip spaces before punctuation in code
    return tokenizer


def build_model(args, tokenizer):
    from transformers import AutoConfig, LlamaConfig, LlamaForCausalLM
    shape = dict(num_hidden_layers=args.layers, hidden_size=args.hidden,
                 num_attention_heads=args.heads, num_key_value_heads=args.kv_heads,
                 head_dim=args.hidden // args.heads, intermediate_size=args.intermediate,
                 tie_word_embeddings=True, vocab_size=len(tokenizer), max_position_embeddings=4096,
                 bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                 pad_token_id=tokenizer.pad_token_id)
    if args.tokenizer_gguf:
        folder, name = os.path.split(os.path.abspath(args.tokenizer_gguf))
        config = AutoConfig.from_pretrained(folder, gguf_file=name)  # SmolLM2's: rope, norms, act
        for key, value in shape.items():
            setattr(config, key, value)
    else:
        config = LlamaConfig(**shape)
    return LlamaForCausalLM(config)


def prompt_ids(tokenizer, prompt) -> list[int]:
    """The prompt as the trainer tokenizes it: the chat template's text, no extra specials."""
    text = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def training_examples(tokenizer, prompts, programs):
    """(input ids, index of the first completion token) per prompt × program."""
    examples = []
    for prompt in prompts:
        prefix = prompt_ids(tokenizer, prompt)
        for program in programs:
            completion = tokenizer(reply_text(program), add_special_tokens=False)["input_ids"]
            examples.append((list(prefix) + completion + [tokenizer.eos_token_id], len(prefix)))
    return examples


def train(args, model, examples):
    """Teacher-forced cross-entropy on the completions. With a large vocabulary most of a step is
    the output layer, so the first steps score only a subset of it: the programs' tokens and
    --negatives random others (new ones each step, pushing the rest down); the last
    --full-steps score the whole vocabulary, and their loss is the one reported."""
    import torch
    import torch.nn.functional as F
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    # Warm up, then cosine down to 2% of --lr: at a constant rate the loss stalls well above its
    # floor, and every extra nat per token compounds over a program's hundreds of tokens.
    total = args.steps + args.full_steps
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / 10) * (
        0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * min(step, total) / total))))
    vocabulary = model.config.vocab_size
    used = torch.tensor(sorted({token for ids, start in examples for token in ids[start:]}))
    started = time.monotonic()
    losses = []

    def one_step(subset):
        if subset is not None:
            position = torch.full((vocabulary,), -1, dtype=torch.long)
            position[subset] = torch.arange(len(subset))
        optimizer.zero_grad()
        total, tokens = 0.0, 0
        for ids, start in examples:
            input_ids = torch.tensor([ids])
            hidden = model.model(input_ids=input_ids).last_hidden_state[0, start - 1:-1]
            labels = input_ids[0, start:]
            if subset is None:
                logits = model.lm_head(hidden)  # only the completion's positions pay for it
            else:
                logits = hidden @ model.lm_head.weight[subset].T
                labels = position[labels]
            loss = F.cross_entropy(logits.float(), labels, reduction="sum")
            (loss / len(examples)).backward()
            total += loss.item()
            tokens += len(ids) - start
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(total / tokens)
        step = len(losses) - 1
        if step % 10 == 0 or subset is None:
            print(f"step {step}: loss per token {losses[-1]:.4f}"
                  f"{'' if subset is None else ' (vocabulary subset)'} "
                  f"({time.monotonic() - started:.0f} s)", flush=True)

    def done():
        return losses[-1] < args.target_loss or time.monotonic() - started > args.max_minutes * 60

    model.train()
    if 0 < args.negatives and args.negatives + len(used) < vocabulary:
        for _ in range(args.steps):
            one_step(torch.unique(torch.cat([used, torch.randint(0, vocabulary, (args.negatives,))])))
            if done():
                break
        for _ in range(args.full_steps):
            one_step(None)
    else:
        for _ in range(args.steps):
            one_step(None)
            if done():
                break
    return losses, time.monotonic() - started


def sampling_check(args, model, tokenizer, prompt, programs):
    import torch
    if args.samples <= 0:
        return {}
    model.eval()
    prefix = {"input_ids": torch.tensor([prompt_ids(tokenizer, prompt)])}
    prefix["attention_mask"] = torch.ones_like(prefix["input_ids"])
    longest = max(len(tokenizer(reply_text(p))["input_ids"]) for p in programs)
    with torch.no_grad():
        output = model.generate(**prefix, do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                                max_new_tokens=longest + 32, num_return_sequences=args.samples,
                                pad_token_id=tokenizer.pad_token_id)
    counts = {os.path.basename(path): 0 for path in args.program}
    counts.update({"other program": 0, "no program": 0})
    for row in output:
        text = tokenizer.decode(row[prefix["input_ids"].shape[1]:], skip_special_tokens=True)
        program = extract_program(text)
        names = [os.path.basename(path) for path, body in zip(args.program, programs)
                 if program is not None and program.strip() == body.strip()]
        counts[names[0] if names else "no program" if program is None else "other program"] += 1
    return counts


def main(argv=None) -> int:
    args = parse_args(argv)
    import pyarrow.parquet as pq
    import torch
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = pq.read_table(os.path.join(args.dataset, "train.parquet")).to_pylist()
    prompts = [row["prompt"] for row in rows]
    if not prompts:
        raise SystemExit(f"error: {args.dataset}/train.parquet has no rows")
    programs = [open(path, encoding="utf-8").read() for path in args.program]
    corpus = [message["content"] for prompt in prompts for message in prompt]
    corpus += [reply_text(program) for program in programs]
    tokenizer = load_tokenizer(args, corpus)
    model = build_model(args, tokenizer)
    examples = training_examples(tokenizer, prompts[:args.train_prompts or len(prompts)], programs)
    parameters = sum(p.numel() for p in model.parameters())
    print(f"policy: {args.layers} layers, hidden {args.hidden}, vocabulary {len(tokenizer)}, "
          f"{parameters / 1e6:.2f} M parameters; {len(examples)} examples "
          f"({min(len(ids) for ids, _ in examples)}-{max(len(ids) for ids, _ in examples)} tokens)",
          flush=True)
    losses, seconds = train(args, model, examples)
    counts = sampling_check(args, model, tokenizer, prompts[0], programs)
    print(f"sampling check ({args.samples} at temperature 1): {counts}", flush=True)
    os.makedirs(args.out, exist_ok=True)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.to(torch.float16).save_pretrained(args.out)
    tokenizer.save_pretrained(args.out)
    size = sum(os.path.getsize(os.path.join(args.out, name)) for name in os.listdir(args.out))
    summary = {"layers": args.layers, "hidden": args.hidden, "vocabulary": len(tokenizer),
               "parameters": parameters, "bytes": size, "steps": len(losses),
               "train_seconds": round(seconds, 1), "final_loss_per_token": losses[-1],
               "programs": [os.path.basename(p) for p in args.program], "sampling_check": counts}
    with open(os.path.join(args.out, "policy.json"), "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=1)
    print(f"saved {args.out} ({size / 2**20:.1f} MiB, fp16)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
