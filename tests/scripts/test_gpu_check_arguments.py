"""scripts/gpu_check.sh refuses what it cannot run before it starts (on the lent GPU machine a
mistyped call would otherwise spend device time reporting every section as failed)."""

import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu_check.sh"


def run(*args):
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=60)


def test_help_prints_the_usage():
    result = run("--help")
    assert result.returncode == 0
    assert "Usage on the device: scripts/gpu_check.sh [BUILD_DIR]" in result.stdout


def test_an_option_is_refused_with_the_usage():
    result = run("--build", "build-device")
    assert result.returncode == 2
    assert "unknown option '--build'" in result.stderr
    assert "Usage on the device" in result.stderr


def test_more_than_one_argument_is_refused():
    result = run("a", "b")
    assert result.returncode == 2
    assert "one argument at most" in result.stderr


def test_a_directory_that_is_no_build_is_refused(tmp_path):
    result = run(str(tmp_path))
    assert result.returncode == 2
    assert "is not a build directory (no CMakeCache.txt)" in result.stderr
    # Nothing ran: no environment report, no section.
    assert "== environment" not in result.stdout
