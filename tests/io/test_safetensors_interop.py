"""Safetensors interop between Python (the reference implementation) and the C++ reader/writer.

Python writes tensors of every dtype, the C++ tool `safetensors_copy` reads and rewrites them, and
Python reads the C++ file back: every tensor must come back bit for bit (NaN payloads, -0.0,
subnormals included), with its shape, dtype and the file's metadata. The tool's path comes from
STITCH_SAFETENSORS_COPY (set by ctest).
"""
import os
import struct
import subprocess

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

TOOL = os.environ.get("STITCH_SAFETENSORS_COPY")
pytestmark = pytest.mark.skipif(not TOOL, reason="STITCH_SAFETENSORS_COPY not set (run through ctest)")

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
          torch.int16, torch.int8, torch.uint8, torch.bool]


def sample_tensors():
    gen = torch.Generator().manual_seed(1234)
    tensors = {}
    for dtype in DTYPES:
        name = str(dtype).removeprefix("torch.")
        if dtype.is_floating_point:
            t = torch.randn(3, 5, 7, generator=gen).to(dtype)
            flat = t.view(-1)
            flat[0] = float("nan")
            flat[1] = float("inf")
            flat[2] = float("-inf")
            flat[3] = -0.0
            flat[4] = torch.finfo(dtype).tiny / 4  # subnormal
            flat[5] = torch.finfo(dtype).max
        elif dtype == torch.bool:
            t = torch.rand(4, 9, generator=gen) > 0.5
        else:
            info = torch.iinfo(dtype)
            t = torch.randint(info.min, info.max, (6, 11), generator=gen, dtype=torch.int64).to(dtype)
            t.view(-1)[0] = info.min
            t.view(-1)[1] = info.max
        tensors[name] = t
    tensors["scalar"] = torch.tensor(2.5, dtype=torch.float32)
    tensors["empty"] = torch.zeros(0, 4, dtype=torch.float16)
    tensors["odd_sized"] = torch.arange(3, dtype=torch.uint8)  # leaves later offsets unaligned
    tensors["transposed"] = torch.randn(4, 6, generator=gen).t().contiguous()
    return tensors


def as_bytes(t):
    return t.contiguous().reshape(-1).view(torch.uint8)


def run_copy(src, dst):
    return subprocess.run([TOOL, str(src), str(dst)], capture_output=True, text=True, timeout=60)


def assert_same(expected, actual):
    assert set(expected) == set(actual)
    for name, t in expected.items():
        got = actual[name]
        assert got.dtype == t.dtype, name
        assert got.shape == t.shape, name
        assert torch.equal(as_bytes(got), as_bytes(t)), name


def test_python_to_cpp_to_python_is_bit_exact(tmp_path):
    tensors = sample_tensors()
    metadata = {"format": "pt", "note": "written by python"}
    src, dst = tmp_path / "py.safetensors", tmp_path / "cpp.safetensors"
    save_file(tensors, str(src), metadata=metadata)
    result = run_copy(src, dst)
    assert result.returncode == 0, result.stderr
    assert_same(tensors, load_file(str(dst)))
    with safe_open(str(dst), framework="pt") as f:
        assert f.metadata() == metadata


def test_cpp_file_layout_is_what_python_expects(tmp_path):
    tensors = sample_tensors()
    src, dst = tmp_path / "py.safetensors", tmp_path / "cpp.safetensors"
    save_file(tensors, str(src))
    assert run_copy(src, dst).returncode == 0
    raw = dst.read_bytes()
    (header_len,) = struct.unpack("<Q", raw[:8])
    assert header_len % 8 == 0
    assert raw[8:9] == b"{"
    # The C++ copy keeps Python's order, so the data sections are identical byte for byte.
    src_raw = src.read_bytes()
    (src_header_len,) = struct.unpack("<Q", src_raw[:8])
    assert raw[8 + header_len:] == src_raw[8 + src_header_len:]
    # And a second copy (C++ reading C++) is byte-identical to the first.
    again = tmp_path / "cpp2.safetensors"
    assert run_copy(dst, again).returncode == 0
    assert again.read_bytes() == raw


def test_cpp_rejects_corrupt_files(tmp_path):
    src = tmp_path / "py.safetensors"
    save_file(sample_tensors(), str(src))
    raw = src.read_bytes()
    cases = {
        "truncated": raw[: len(raw) - 3],
        "huge_header_length": struct.pack("<Q", 1 << 62) + raw[8:],
        "not_json": raw[:8] + b"X" + raw[9:],
        "tiny": raw[:5],
    }
    for name, data in cases.items():
        bad = tmp_path / f"{name}.safetensors"
        bad.write_bytes(data)
        result = run_copy(bad, tmp_path / f"{name}.out")
        assert result.returncode == 1, name
        assert "error:" in result.stderr and str(bad) in result.stderr, (name, result.stderr)
        assert not (tmp_path / f"{name}.out").exists(), name
