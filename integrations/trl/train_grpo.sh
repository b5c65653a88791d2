#!/usr/bin/env bash
# Launches integrations/trl/train_grpo.py (GRPO with TRL, rewards from `stitchcuda serve`).
#   integrations/trl/train_grpo.sh --dataset DS --model MODEL --serve-url URL --output-dir OUT [GRPO knobs]
#   NPROC=8 integrations/trl/train_grpo.sh ...   one process per GPU through `accelerate launch`
# Python: $STITCH_TRL_PYTHON, else the checkout's .venv-trl (integrations/trl/setup.sh), else python3.
# `--help` lists the knobs (num generations, prompts per step, steps, learning rate, lengths).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
python=${STITCH_TRL_PYTHON:-}
if [ -z "$python" ]; then
  if [ -x "$root/.venv-trl/bin/python" ]; then python=$root/.venv-trl/bin/python; else python=python3; fi
fi
"$python" -c "import trl" 2>/dev/null ||
  { echo "error: $python cannot import trl: run integrations/trl/setup.sh (or set STITCH_TRL_PYTHON)" >&2; exit 2; }
nproc=${NPROC:-1}
if [ "$nproc" -gt 1 ]; then
  exec "$python" -m accelerate.commands.launch --num_processes "$nproc" "$here/train_grpo.py" "$@"
fi
exec "$python" "$here/train_grpo.py" "$@"
