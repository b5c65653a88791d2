#!/usr/bin/env bash
# Runs the verl integration tests (pytest) in .venv-verl, the environment
# integrations/verl/setup.sh makes; skips (exit 77) with the reason when it is absent.
# Usage: run_pytest.sh SOURCE_DIR TEST_FILE [pytest args...]
#   STITCH_VERL_VENV names another environment; STITCHCUDA_BIN, STITCHCUDA_SERVE_BIN come from ctest.
set -u
source_dir=$1; shift
venv=${STITCH_VERL_VENV:-$source_dir/.venv-verl}
skip() { echo "SKIP: $*"; exit 77; }
why="integrations/verl/setup.sh installs it; scripts/setup.sh runs it unless STITCH_SETUP_VERL=0, and CI \
(.ci/run: STITCH_SETUP_VERL=cached) only when the machine has the wheels cached"
[ -x "$venv/bin/python" ] || skip "no $venv with verl 0.9.1: $why"
"$venv/bin/python" -c 'import verl, pytest' 2>/dev/null || skip "$venv lacks verl or pytest: $why"
cd "$source_dir/tests/integrations/verl" || exit 1
# -p no:cacheprovider: nothing written into the source tree.
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider -o addopts="" "$@"
