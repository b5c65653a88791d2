#!/usr/bin/env bash
# Two real GRPO steps (TRL, CPU) end to end: `stitchcuda dataset` writes the Parquet of the fixture
# run directories; `stitchcuda serve --fake-scorer` scores; make_smoke_policy.py trains a tiny
# randomly initialised Llama (small BPE vocabulary, ~30 K parameters) for a few seconds to answer
# with one of two programs the fake scorer tells apart (FAKE_SPEEDUP=2 correct, FAKE_WRONG wrong);
# train_grpo.py runs 2 steps × 2 prompts × 4 generations with the async reward function.
# Checks: every step logged TRL's reward (rewards/stitchcuda/mean) equal to the mean of the
# service's rewards; the service accepted exactly the requests the reward function sent, and
# sent some; the rewards are the fake scorer's (0 or 1 + 2 = 3).
# Skips (77) without .venv-trl (integrations/trl/setup.sh).
set -u
bin=$1; root=$2
venv=${STITCH_TRL_VENV:-$root/.venv-trl}
if ! STITCH_TRL_VENV=$venv "$root/integrations/trl/setup.sh" --check; then
  echo "SKIP: $venv has no TRL: run integrations/trl/setup.sh (scripts/setup.sh STITCH_SETUP_TRL=1)"
  exit 77
fi
py=$venv/bin/python
tmp=$(mktemp -d)
serve_pid=""
cleanup() { [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid"; rm -rf "$tmp"; }
trap cleanup EXIT
export OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
export HF_HOME=$tmp/hf STITCH_SERVE_TOKEN=trl-test-token
fail() { echo "FAIL: $*"; exit 1; }

"$bin" dataset "$root/tests/integrations/data/run_scale_shift_relu" "$root/tests/dataset/data/run_relu" \
  --out "$tmp/ds" --val-fraction 0 >"$tmp/dataset.log" 2>&1 || { cat "$tmp/dataset.log"; fail "dataset"; }

"$bin" serve --fake-scorer --port 0 --port-file "$tmp/port" --state-dir "$tmp/state" \
  --runs-dir "$tmp/runs" >"$tmp/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
[ -s "$tmp/port" ] || { cat "$tmp/serve.log"; fail "serve did not start"; }
url=http://127.0.0.1:$(cat "$tmp/port")

mkdir -p "$tmp/programs"
printf '// FAKE_SPEEDUP=2\nextern "C" int stitch_forward() { return 0; }\n' >"$tmp/programs/fast.cu"
printf '// FAKE_WRONG\nextern "C" int stitch_forward() { return 0; }\n' >"$tmp/programs/wrong.cu"
"$py" "$root/integrations/trl/make_smoke_policy.py" --dataset "$tmp/ds" --out "$tmp/policy" \
  --program "$tmp/programs/fast.cu" --program "$tmp/programs/wrong.cu" --bpe-vocab 400 \
  --layers 2 --hidden 32 --heads 2 --kv-heads 1 --intermediate 64 --steps 80 --lr 1e-2 \
  --target-loss 0.03 --samples 0 >"$tmp/policy.log" 2>&1 || { cat "$tmp/policy.log"; fail "policy"; }
tail -2 "$tmp/policy.log"

"$root/integrations/trl/train_grpo.sh" --dataset "$tmp/ds" --model "$tmp/policy" --serve-url "$url" \
  --output-dir "$tmp/grpo" --cpu --no-save --num-generations 4 --prompts-per-step 2 --max-steps 2 \
  --max-completion-length 64 --learning-rate 1e-4 --seed 1 >"$tmp/train.log" 2>&1 \
  || { tail -40 "$tmp/train.log"; fail "train_grpo"; }
tr "\r" "\n" < "$tmp/train.log" | grep -aE "^step |^done"

curl -s "$url/metrics" >"$tmp/metrics.txt" || fail "no /metrics"
"$py" - "$tmp/grpo/metrics.jsonl" "$tmp/metrics.txt" <<'PY' || { tail -20 "$tmp/train.log"; exit 1; }
import json, math, re, sys
lines = [json.loads(line) for line in open(sys.argv[1])]
assert [line["step"] for line in lines] == [1, 2], [line.get("step") for line in lines]
sent = 0
for line in lines:
    assert line["completions"] == 8, line
    trl_mean = line["trl"].get("rewards/stitchcuda/mean")
    assert trl_mean is not None, f"TRL did not log the reward: {sorted(line['trl'])}"
    assert math.isclose(trl_mean, line["reward_mean"], abs_tol=1e-4), (trl_mean, line["reward_mean"])
    sent += round(line["completions"] * (1 - line["no_program_rate"]))
    assert line["unscored_rate"] == 0, line
metrics = open(sys.argv[2]).read()
accepted = int(re.search(r"^stitchcuda_serve_accepted_total (\d+)", metrics, re.M).group(1))
assert sent > 0, "the policy wrote no program: no request reached the service"
assert accepted == sent, (accepted, sent)
print(f"ok   2 GRPO steps; the service accepted {accepted} requests; "
      f"rewards per step {[round(l['reward_mean'], 3) for l in lines]}, "
      f"within-group variance {[round(l['within_group_variance'], 3) for l in lines]}")
PY
