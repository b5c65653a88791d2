"""Measures the relative error norms that FP32_REL_ERR_NORM_MAX (judge_tracks.py) must separate.

    python -m stitch_harness.precision_probe [--device cuda] [--json OUT.json]

For a GEMM 1024x4096 @ 4096x4096 and a 3x3 convolution it prints ||x - ref|| / ||ref|| of:
strict FP32 vs FP64, TF32 vs strict FP32 (what a TF32 candidate scores on the fp32 track), emulated
3xTF32 (split-precision on tensor cores) vs strict FP32, and strict FP32 vs strict FP32 computed in a
different order (what an honest FP32 candidate scores). The threshold belongs between the 3xTF32 /
reordered-FP32 values and the TF32 value.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch
import torch.nn.functional as F

from .judge_tracks import FP32_REL_ERR_NORM_MAX, PrecisionFlags, precision_flags

STRICT = PrecisionFlags(False, False)
TF32 = PrecisionFlags(True, True)


def rel_err_norm(value: torch.Tensor, ref: torch.Tensor) -> float:
    value = value.double()
    ref = ref.double()
    return float(torch.linalg.vector_norm(value - ref) / torch.linalg.vector_norm(ref))


def split_tf32(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x = hi + lo with hi exactly representable in TF32 (low 13 mantissa bits cleared)."""
    hi = (x.contiguous().view(torch.int32) & ~0x1FFF).view(torch.float32)
    return hi, x - hi


def gemm_case(device: torch.device, m: int, k: int, n: int) -> dict:
    gen = torch.Generator(device="cpu").manual_seed(1234)
    a = torch.randn(m, k, generator=gen).to(device)
    b = torch.randn(k, n, generator=gen).to(device)
    exact = a.double() @ b.double()
    with precision_flags(STRICT):
        strict = a @ b
        # Same arithmetic, different summation order: two halves of K added at the end.
        half = k // 2
        reordered = a[:, :half] @ b[:half] + a[:, half:] @ b[half:]
    with precision_flags(TF32):
        tf32 = a @ b
        a_hi, a_lo = split_tf32(a)
        b_hi, b_lo = split_tf32(b)
        three_tf32 = a_lo @ b_hi + a_hi @ b_lo + a_hi @ b_hi
    return _rows(f"gemm {m}x{k} @ {k}x{n}", exact, strict, reordered, tf32, three_tf32)


def conv_case(device: torch.device) -> dict:
    gen = torch.Generator(device="cpu").manual_seed(4321)
    x = torch.randn(32, 64, 56, 56, generator=gen).to(device)
    w = (torch.randn(128, 64, 3, 3, generator=gen) * (1.0 / 24.0)).to(device)
    exact = F.conv2d(x.double(), w.double(), padding=1)
    with precision_flags(STRICT):
        strict = F.conv2d(x, w, padding=1)
        reordered = F.conv2d(x[:, :32], w[:, :32], padding=1) + F.conv2d(x[:, 32:], w[:, 32:],
                                                                        padding=1)
    with precision_flags(TF32):
        tf32 = F.conv2d(x, w, padding=1)
        x_hi, x_lo = split_tf32(x)
        w_hi, w_lo = split_tf32(w)
        three_tf32 = (F.conv2d(x_lo, w_hi, padding=1) + F.conv2d(x_hi, w_lo, padding=1)
                      + F.conv2d(x_hi, w_hi, padding=1))
    return _rows("conv2d 32x64x56x56, 128 3x3 filters", exact, strict, reordered, tf32, three_tf32)


def _rows(name, exact, strict, reordered, tf32, three_tf32) -> dict:
    return {
        "case": name,
        "fp32_vs_fp64": rel_err_norm(strict, exact),
        "fp32_reordered_vs_fp32": rel_err_norm(reordered, strict),
        "3xtf32_vs_fp32": rel_err_norm(three_tf32, strict),
        "tf32_vs_fp32": rel_err_norm(tf32, strict),
        "tf32_vs_fp64": rel_err_norm(tf32, exact),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--json", help="also write the table here")
    parser.add_argument("--small", action="store_true", help="small GEMM (CPU smoke runs)")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    shape = (64, 256, 128) if args.small else (1024, 4096, 4096)
    rows = [gemm_case(device, *shape)]
    if not args.small:
        rows.append(conv_case(device))
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"device: {gpu}; current FP32_REL_ERR_NORM_MAX = {FP32_REL_ERR_NORM_MAX:g}")
    for row in rows:
        print(row["case"])
        for key, value in row.items():
            if key != "case":
                verdict = "passes" if value <= FP32_REL_ERR_NORM_MAX else "fails"
                print(f"  {key:<24} {value:.3e}  ({verdict} the fp32 bound)")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"device": gpu, "torch": torch.__version__, "rows": rows}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
