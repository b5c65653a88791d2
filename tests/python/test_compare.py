"""compare.py: the statistics of one output check, and the pass/fail rules of each track."""

import math

import pytest
import torch

from test_judge_support import apply_marks, gpu  # noqa: F401  (puts python/ on path)

from stitch_harness.compare import (REFERENCE_NOISE_FACTOR, TAIL_ENERGY_FACTOR, TAIL_POPULATION,
                                    compare_output, compare_outputs, needs_track_reference,
                                    recheck_against_exact, undecided_outputs)
from stitch_harness.judge_tracks import FP32_REL_ERR_NORM_MAX, get_track, rounding_ratio

FP32 = get_track("fp32")
TF32 = get_track("tf32")
BF16 = get_track("bf16")


def reference(n=4096, seed=0):
    return torch.randn(n, generator=torch.Generator().manual_seed(seed))


def test_identical_output_passes_with_zero_error():
    ref = reference()
    check = compare_output(ref.clone(), ref, FP32)
    assert check.passed
    assert check.max_abs_error == 0.0
    assert check.max_abs_error_index == -1
    assert check.relative_error_norm == 0.0
    assert check.mismatches == 0 and check.first_mismatch_index == -1
    assert check.elements == ref.numel()


def test_small_error_within_tolerance_passes_and_is_measured():
    ref = reference()
    out = ref.clone()
    out[17] += 1e-6
    delta = float(out[17].double() - ref[17].double())  # 1e-6 after float32 rounding
    check = compare_output(out, ref, FP32)
    assert check.passed
    assert check.max_abs_error_index == 17
    assert check.max_abs_error == pytest.approx(delta, rel=1e-9)
    expected_norm = delta / float(ref.double().norm())
    assert check.relative_error_norm == pytest.approx(expected_norm, rel=1e-2)


def test_mismatches_are_counted_with_the_first_index():
    ref = reference()
    out = ref.clone()
    out[100] += 1.0
    out[7] -= 1.0
    out[3000] += 0.5
    check = compare_output(out, ref, FP32)
    assert not check.passed
    assert check.mismatches == 3
    assert check.first_mismatch_index == 7
    assert check.max_abs_error == pytest.approx(1.0, rel=1e-6)
    assert check.max_abs_error_index in (7, 100)
    assert "3 of 4096 elements outside" in check.message


def test_nan_where_reference_is_finite_fails():
    ref = reference()
    out = ref.clone()
    out[5] = float("nan")
    out[9] = float("inf")
    check = compare_output(out, ref, FP32)
    assert not check.passed
    assert check.nan_or_inf == 2
    assert check.first_mismatch_index == 5
    assert math.isinf(check.relative_error_norm)
    as_json = check.as_json()
    assert as_json["relative_error_norm"] is None and as_json["max_abs_error"] is None


def test_nonfinite_reference_must_be_reproduced():
    ref = reference(8)
    ref[2] = float("nan")
    ref[3] = float("-inf")
    assert compare_output(ref.clone(), ref, FP32).passed
    out = ref.clone()
    out[3] = float("inf")  # wrong sign
    check = compare_output(out, ref, FP32)
    assert not check.passed and check.mismatches == 1 and check.first_mismatch_index == 3
    out = ref.clone()
    out[2] = 0.0
    assert not compare_output(out, ref, FP32).passed


def test_shape_mismatch_fails_with_message():
    check = compare_output(torch.zeros(4, 2), torch.zeros(8), FP32)
    assert not check.passed
    assert "shape mismatch" in check.message and "[4, 2]" in check.message


def test_dtype_mismatch_fails_with_message():
    check = compare_output(torch.zeros(8, dtype=torch.float64), torch.zeros(8), FP32)
    assert not check.passed
    assert "dtype mismatch" in check.message


def test_output_count_mismatch_fails():
    checks = compare_outputs([torch.zeros(2)], [torch.zeros(2), torch.zeros(2)], FP32)
    assert len(checks) == 1 and not checks[0].passed
    assert "count mismatch" in checks[0].message


def test_fp32_track_rejects_tf32_sized_errors_that_allclose_accepts():
    ref = reference(1 << 16)
    gen = torch.Generator().manual_seed(1)
    # Every element just inside atol + rtol*|ref| (so allclose passes), random sign: a relative
    # error norm of ~1e-4, the size TF32 rounding leaves.
    allowed = FP32.atol + FP32.rtol * ref.abs()
    size = allowed * (0.5 + 0.49 * torch.rand(ref.shape, generator=gen))
    sign = torch.where(torch.rand(ref.shape, generator=gen) < 0.5, -1.0, 1.0)
    out = ref + sign * size
    fp32 = compare_output(out, ref, FP32)
    tf32 = compare_output(out, ref, TF32)
    assert fp32.mismatches == 0  # allclose alone would pass it
    assert fp32.relative_error_norm > FP32_REL_ERR_NORM_MAX
    assert not fp32.passed and "relative error norm" in fp32.message
    assert tf32.passed


def test_fp32_level_error_passes_the_norm_bound():
    ref = reference(1 << 16)
    out = (ref.double() * (1 + 1e-7)).float()
    check = compare_output(out, ref, FP32)
    assert check.passed
    assert check.relative_error_norm < FP32_REL_ERR_NORM_MAX


@pytest.mark.parametrize("track", [FP32, TF32])
def test_tiny_reference_rejects_zeros_on_every_track(track):
    ref = reference() * 1e-6  # every element within atol of zero
    check = compare_output(torch.zeros_like(ref), ref, track)
    assert check.mismatches == 0  # allclose alone passes zeros
    assert check.degenerate_reference
    assert "within atol" in check.degenerate_reason
    assert not check.passed
    assert compare_output(ref.clone(), ref, track).passed


def test_near_constant_reference_is_flagged_but_not_failed():
    ref = torch.full((1000,), 0.25) + torch.randn(1000) * 1e-9
    check = compare_output(ref.clone(), ref, FP32)
    assert check.passed
    assert check.degenerate_reference and "near-constant" in check.degenerate_reason
    assert "degenerate reference" in check.message


def test_all_zero_reference_is_flagged():
    ref = torch.zeros(64)
    check = compare_output(torch.zeros(64), ref, FP32)
    assert check.passed and check.degenerate_reference
    assert check.degenerate_reason == "reference is all zeros"
    assert not compare_output(torch.ones(64), ref, FP32).passed


def test_chunked_comparison_matches_single_pass():
    ref = reference(10000, seed=3)
    out = ref + torch.randn(10000, generator=torch.Generator().manual_seed(4)) * 1e-3
    out[9999] = float("nan")
    whole = compare_output(out, ref, FP32)
    chunked = compare_output(out, ref, FP32, chunk_elements=333)
    for field in ("mismatches", "first_mismatch_index", "nan_or_inf", "max_abs_error_index",
                  "elements"):
        assert getattr(whole, field) == getattr(chunked, field), field
    assert whole.passed == chunked.passed


def test_integer_and_bool_outputs_compare_exactly_enough():
    ref = torch.arange(100)
    assert compare_output(ref.clone(), ref, FP32).passed
    out = ref.clone()
    out[50] = 0
    assert not compare_output(out, ref, FP32).passed
    mask = torch.rand(100) > 0.5
    assert compare_output(mask.clone(), mask, FP32).passed
    assert not compare_output(~mask, mask, FP32).passed


@apply_marks(gpu)
def test_compare_on_gpu_matches_cpu():
    ref = reference(1 << 20)
    out = ref + torch.randn(ref.shape) * 1e-5
    cpu = compare_output(out, ref, FP32)
    cuda = compare_output(out.cuda(), ref.cuda(), FP32)
    assert cpu.mismatches == cuda.mismatches
    assert cpu.first_mismatch_index == cuda.first_mismatch_index
    assert cuda.relative_error_norm == pytest.approx(cpu.relative_error_norm, rel=1e-6)


def ill_conditioned(noise=1e-3, seed=0):
    """Outputs of scale ~1000 (a sum of many large terms) where the FP32 reference itself is off
    by ~`noise`: near-zero elements fail allclose against it for any program adding in another
    order, while the error norm stays at FP32 level."""
    g = torch.Generator().manual_seed(seed)
    exact = torch.randn(4096, generator=g, dtype=torch.float64) * 1000
    exact[:8] = torch.tensor([0.5, -0.25, 1e-3, 2.0, -3.0, 0.1, -0.05, 4.0], dtype=torch.float64)
    ref = (exact + noise * torch.randn(4096, generator=g, dtype=torch.float64)).float()
    out = (exact + noise * torch.randn(4096, generator=g, dtype=torch.float64)).float()
    return out, ref, exact


def test_an_fp64_reference_overturns_mismatches_that_are_the_fp32_references_own_error():
    out, ref, exact = ill_conditioned()
    check = compare_output(out, ref, FP32)
    assert not check.passed and check.elementwise_only and check.mismatches > 0
    mismatches = check.mismatches
    recheck_against_exact(check, out, ref, exact, FP32)
    assert check.passed, check.message
    assert check.exact_reference_elements == mismatches and check.mismatches == 0
    assert 5e-4 < check.reference_noise_rms < 2e-3
    assert "FP64 reference" in check.message
    assert "elementwise_only" not in check.as_json()


def test_a_real_error_stays_wrong_after_the_fp64_recheck():
    out, ref, exact = ill_conditioned()
    out[3] += 1.0  # far beyond the reference's own error (~1e-3)
    check = compare_output(out, ref, FP32)
    recheck_against_exact(check, out, ref, exact, FP32)
    assert not check.passed
    assert "1 still outside (first at flat index 3)" in check.message


def test_a_well_conditioned_output_gets_no_slack():
    # The FP32 reference is exact here: noise 0, so the recheck is allclose against it again.
    exact = torch.linspace(-2, 2, 1000, dtype=torch.float64)
    ref = exact.float()
    out = ref.clone()
    out[500] += 5e-4
    check = compare_output(out, ref, FP32, rel_err_norm_max=1.0)
    recheck_against_exact(check, out, ref, exact, FP32)
    assert not check.passed and check.reference_noise_rms < 1e-7


def test_a_loose_track_elementwise_failure_gets_the_fp64_second_opinion():
    # A loose track has no norm bound to say when an output is ill-conditioned; its degenerate
    # bound does (the recheck raised a TypeError comparing None with a float here).
    out, ref, exact = ill_conditioned(noise=2e-2)
    check = compare_output(out, ref, TF32)
    assert not check.passed and check.elementwise_only and check.failed_norm_bound is None
    recheck_against_exact(check, out, ref, exact, TF32)
    assert check.passed, check.message
    assert check.reference_noise_allowance == check.reference_noise_rms  # not ill-conditioned


def heavy_tailed_ill_conditioned(seed=0):
    """A softmax-like output (values in [0, 1]) that is ill-conditioned as a whole, the way
    KernelBench's UNet-softmax is (training-mode BatchNorm over few elements): 1% of the elements
    carry FP32 rounding errors of ~1e-2 that the conditioning amplifies, the rest ~1e-7. Any FP32
    program errs on the same elements by as much, in other directions."""
    g = torch.Generator().manual_seed(seed)
    exact = torch.rand(10000, generator=g, dtype=torch.float64)
    sensitive = torch.zeros(10000, dtype=torch.bool)
    sensitive[::100] = True
    def rounded():
        scale = torch.where(sensitive, 1e-2, 1e-7)
        return (exact + scale * torch.randn(10000, generator=g, dtype=torch.float64)).float()
    return rounded(), rounded(), exact


def test_an_ill_conditioned_output_allows_the_fp32_references_largest_error_per_element():
    out, ref, exact = heavy_tailed_ill_conditioned()
    check = compare_output(out, ref, FP32)
    assert not check.passed and check.failed_norm_bound == FP32_REL_ERR_NORM_MAX
    noise = (ref.double() - exact)
    # Against the RMS of the reference's error alone, this honest program would stay wrong.
    assert int(((out.double() - exact).abs() > 1e-4 + 1e-4 * exact.abs() +
                REFERENCE_NOISE_FACTOR * noise.pow(2).mean().sqrt()).sum()) > 0
    recheck_against_exact(check, out, ref, exact, FP32)
    assert check.passed, check.message
    assert check.reference_noise_allowance == pytest.approx(float(noise.abs().max()), rel=1e-6)
    assert "ill-conditioned" in check.message


def test_an_error_beyond_the_largest_fp32_error_stays_wrong_on_an_ill_conditioned_output():
    out, ref, exact = heavy_tailed_ill_conditioned()
    out[5] += 0.5  # an insensitive element, 20x the reference's largest error; the norm still fits
    check = compare_output(out, ref, FP32)
    recheck_against_exact(check, out, ref, exact, FP32)
    assert not check.passed
    assert "1 still outside (first at flat index 5)" in check.message
    assert "the output is ill-conditioned" in check.message


def past_the_cap(seed=1):
    """Relative error ~1 (EfficientNet-B2-like): the FP32 reference and an FP32 program are both
    rounding noise around the exact answer."""
    g = torch.Generator().manual_seed(seed)
    exact = torch.rand(10000, generator=g, dtype=torch.float64) * 1e-3
    ref = (exact + 1e-3 * torch.randn(10000, generator=g, dtype=torch.float64)).float()
    out = (exact + 1e-3 * torch.randn(10000, generator=g, dtype=torch.float64)).float()
    return out, ref, exact


def test_past_the_cap_a_passing_check_is_undecided():
    # No FP32 result tells right from wrong there: the check passes within 8x the reference's
    # error, but decides nothing.
    out, ref, exact = past_the_cap()
    check = recheck_against_exact(compare_output(out, ref, FP32), out, ref, exact, FP32)
    assert check.passed and check.undecided, check.message
    assert "undecided" in check.message and check.as_json()["undecided"]
    assert undecided_outputs([check]) == [0]


def test_an_undecided_output_needs_one_check_that_decides_it():
    out, ref, exact = past_the_cap()
    undecided = recheck_against_exact(compare_output(out, ref, FP32), out, ref, exact, FP32)
    decided = compare_output(ref, ref, FP32)  # another check set, well-conditioned and passed
    assert decided.passed and not decided.undecided
    assert undecided_outputs([undecided, decided]) == []
    # Another output's decided check does not decide this one.
    other = compare_output(ref, ref, FP32, output_index=1)
    assert undecided_outputs([undecided, other]) == [0]
    # An output that failed somewhere is left to that failure.
    failed = compare_output(ref + 1.0, ref, FP32)
    assert not failed.passed and undecided_outputs([undecided, failed]) == []


def test_within_the_cap_a_passing_check_decides():
    out, ref, exact = heavy_tailed_ill_conditioned()
    check = recheck_against_exact(compare_output(out, ref, FP32), out, ref, exact, FP32)
    assert check.passed and not check.undecided


def test_a_well_conditioned_output_keeps_the_rms_allowance():
    out, ref, exact = ill_conditioned()
    check = recheck_against_exact(compare_output(out, ref, FP32), out, ref, exact, FP32)
    assert check.passed and check.reference_noise_allowance == check.reference_noise_rms


def test_an_error_norm_failure_stands_where_the_fp32_reference_meets_the_bound():
    # A precision downgrade: every element a little off, the norm over its bound. The FP32
    # reference's own relative error (~1e-6) is far inside the bound, so the FP64 reference
    # changes nothing.
    out, ref, exact = ill_conditioned(noise=1e-3)
    out = (out.double() * (1 + 3e-4)).float()
    check = compare_output(out, ref, FP32)
    assert not check.passed and not check.elementwise_only
    assert check.failed_norm_bound == FP32_REL_ERR_NORM_MAX
    recheck_against_exact(check, out, ref, exact, FP32)
    assert not check.passed and check.exact_reference_elements == 0
    assert "meets the bound, so the error norm stands" in check.message


def rounding_noise_output(seed=0):
    """BatchNorm's running mean over an already normalised input: exactly zero per channel, FP32
    rounding noise of ~1e-9 in the reference and in any program (KernelBench's EfficientNet-B0
    records 13 of these)."""
    g = torch.Generator().manual_seed(seed)
    exact = torch.randn(96, generator=g, dtype=torch.float64) * 1e-17
    ref = (exact + 2e-9 * torch.randn(96, generator=g, dtype=torch.float64)).float()
    out = (exact + 2e-9 * torch.randn(96, generator=g, dtype=torch.float64)).float()
    return out, ref, exact


def test_an_output_of_pure_rounding_noise_is_judged_against_fp64():
    out, ref, exact = rounding_noise_output()
    check = compare_output(out, ref, FP32)
    assert not check.passed and check.degenerate_reference and check.relative_error_norm > 0.5
    recheck_against_exact(check, out, ref, exact, FP32)
    assert check.passed, check.message
    assert "the FP32 reference's own rounding" in check.message
    assert "degenerate reference" in check.message  # still flagged for the rubric
    # Zeros are as close to the exact answer as the FP32 reference is: they pass too.
    zeros = torch.zeros_like(ref)
    check = recheck_against_exact(compare_output(zeros, ref, FP32), zeros, ref, exact, FP32)
    assert check.passed, check.message


def test_an_output_far_from_the_exact_noise_stays_wrong():
    out, ref, exact = rounding_noise_output()
    out = out + 1e-6  # 500x the rounding noise: a wrong mean, not another order of additions
    check = recheck_against_exact(compare_output(out, ref, FP32), out, ref, exact, FP32)
    assert not check.passed
    assert "the error norm" in check.message and "is above" in check.message


def test_zeros_for_a_small_but_exact_reference_stay_wrong():
    # HACKS row 10: a reference within atol of zero that FP32 holds exactly (no rounding noise)
    # gets no slack from the FP64 reference; zeros fail its norm bound as before.
    exact = torch.linspace(1e-6, 5e-6, 256, dtype=torch.float64)
    ref = exact.float()
    zeros = torch.zeros_like(ref)
    check = compare_output(zeros, ref, FP32)
    assert not check.passed and check.degenerate_reference
    recheck_against_exact(check, zeros, ref, exact, FP32)
    assert not check.passed and "the error norm stands" in check.message


def tf32_rounding_noise_output(program_noise, track_noise=2e-6, seed=0):
    """rounding_noise_output on the tf32 track: PyTorch there computes the convolution before the
    BatchNorm in TF32, so its running mean is noise `track_noise`, 1000x the strict FP32
    reference's (KernelBench's EfficientNet-B0 and -B1); the program's noise is
    `program_noise`."""
    g = torch.Generator().manual_seed(seed)
    exact = torch.randn(96, generator=g, dtype=torch.float64) * 1e-17
    def noisy(scale):
        return (exact + scale * torch.randn(96, generator=g, dtype=torch.float64)).float()
    return noisy(program_noise), noisy(2e-9), noisy(track_noise), exact


def test_a_loose_track_allows_pytorchs_own_rounding_on_that_track():
    # PyTorch's noise on the track past what TF32 rounding accounts for (2^13x the strict
    # reference's): its own result is the yardstick.
    out, ref, on_track, exact = tf32_rounding_noise_output(program_noise=2e-4, track_noise=1e-4)
    error = (out.double() - exact).norm()
    assert error < REFERENCE_NOISE_FACTOR * (on_track.double() - exact).norm()
    assert error > REFERENCE_NOISE_FACTOR * rounding_ratio(TF32) * (ref.double() - exact).norm()
    check = recheck_against_exact(compare_output(out, ref, TF32), out, ref, exact, TF32)
    assert not check.passed
    assert "8x the FP32 reference's error scaled to track tf32's rounding" in check.message
    check = recheck_against_exact(compare_output(out, ref, TF32), out, ref, exact, TF32,
                                  track_reference=on_track)
    assert check.passed, check.message
    assert "the error norm is PyTorch's own rounding on track tf32" in check.message


def test_a_loose_track_allows_its_rounding_where_pytorch_kept_fp32():
    # KernelBench's ShuffleNet unit on an H100: PyTorch's TF32 run leaves the grouped convolution
    # before a BatchNorm in FP32, so its running mean (exactly zero: noise) is as fine as the
    # strict reference's; a program with TF32 convolutions records noise 70x coarser, well within
    # TF32's rounding. The fp32 track holds the same output to strict FP32's noise.
    out, ref, on_track, exact = tf32_rounding_noise_output(program_noise=1.4e-7, track_noise=2e-9)
    check = recheck_against_exact(compare_output(out, ref, TF32), out, ref, exact, TF32,
                                  track_reference=on_track)
    assert check.passed, check.message
    assert "scaled to track tf32's rounding (8192x)" in check.message
    check = recheck_against_exact(compare_output(out, ref, FP32), out, ref, exact, FP32)
    assert not check.passed and "is above" in check.message


def test_an_error_beyond_the_tracks_rounding_stays_wrong():
    out, ref, on_track, exact = tf32_rounding_noise_output(program_noise=1e-3)
    check = recheck_against_exact(compare_output(out, ref, TF32), out, ref, exact, TF32,
                                  track_reference=on_track)
    assert not check.passed
    assert "is above" in check.message
    assert "8x the FP32 reference's error scaled to track tf32's rounding" in check.message


def test_rounding_ratio_is_the_tracks_unit_roundoff_over_fp32s():
    assert rounding_ratio(FP32) == 1.0
    assert rounding_ratio(TF32) == 2.0 ** 13 and rounding_ratio(BF16) == 2.0 ** 16


def test_a_noisy_track_reference_does_not_loosen_a_reference_fp32_holds_exactly():
    # Whether the error norm may be judged against FP64 at all is the FP32 reference's to say:
    # it describes the model. HACKS row 10 holds on a loose track too.
    exact = torch.linspace(1e-6, 5e-6, 256, dtype=torch.float64)
    ref = exact.float()
    on_track = (exact * 1.001).float()
    zeros = torch.zeros_like(ref)
    check = recheck_against_exact(compare_output(zeros, ref, TF32), zeros, ref, exact, TF32,
                                  track_reference=on_track)
    assert not check.passed and "the error norm stands" in check.message


def test_only_a_loose_track_takes_pytorchs_result_on_it_as_a_yardstick():
    # The fp32 track holds a program to strict FP32's rounding: the judge computes no track
    # reference there (judge_serve._compare_all).
    assert not needs_track_reference(FP32)
    assert needs_track_reference(TF32) and needs_track_reference(BF16)


def test_structural_failures_are_never_rechecked():
    ref = reference()
    out = ref.clone()
    out[7] = float("nan")
    check = compare_output(out, ref, FP32)
    assert not check.passed and not check.exact_may_overturn
    assert recheck_against_exact(check, out, ref, ref.double(), FP32).passed is False


def scattered_tail(seed=2):
    """Well-conditioned as a whole (relative error ~1e-7) but with a few elements whose FP32
    rounding the computation amplifies (Mamba2's exponentiated segment sums): the FP32
    reference's RMS error is dominated by them, and errors past 8x that RMS are a tail that any
    FP32 program has, on its own handful of elements."""
    g = torch.Generator().manual_seed(seed)
    exact = torch.randn(100000, generator=g, dtype=torch.float64) * 1e6
    def rounded(sensitive):
        scale = torch.full_like(exact, 1e-1)
        scale[sensitive] = 1e2
        return (exact + scale * torch.randn(100000, generator=g, dtype=torch.float64)).float()
    ref = rounded(torch.arange(0, 100000, 1000))
    out = rounded(torch.arange(500, 100000, 2000))  # half as many sensitive elements
    return out, ref, exact


def outside_allowance(values, ref, exact):
    """The elements of `values` past 8x the FP32 reference's RMS error of `exact`."""
    noise_rms = (ref.double() - exact).pow(2).mean().sqrt()
    limit = 1e-4 + 1e-4 * exact.abs() + REFERENCE_NOISE_FACTOR * noise_rms
    return (values.double() - exact).abs() > limit


def test_a_tail_no_longer_than_the_references_own_passes():
    out, ref, exact = scattered_tail()
    check = compare_output(out, ref, FP32)
    assert not check.passed and check.failed_norm_bound is None
    # The honest program has elements past 8x the reference's RMS error, as the reference does.
    assert 0 < int(outside_allowance(out, ref, exact).sum()) <= \
        int(outside_allowance(ref, ref, exact).sum())
    recheck_against_exact(check, out, ref, exact, FP32)
    assert check.passed, check.message
    assert "no more than the FP32 reference's own" in check.message


def test_a_tail_longer_than_the_references_own_stays_wrong():
    out, ref, exact = scattered_tail()
    tail = int(outside_allowance(ref, ref, exact).sum())
    largest = float((ref.double() - exact).abs().max())
    # Insensitive elements of small magnitude (allowance ~35), each off by less than the
    # reference's largest error (~300), but one more of them than the reference has.
    small = torch.nonzero(exact.abs() < 1e5).flatten()
    wrong = small[(small % 500 != 0)][: tail + 1]
    out[wrong] += 0.9 * largest
    check = recheck_against_exact(compare_output(out, ref, FP32), out, ref, exact, FP32)
    assert not check.passed
    assert f"the FP32 reference itself has {tail} there" in check.message
    out[wrong[1:]] -= 0.9 * largest  # one such element, the tail no longer than the reference's
    assert recheck_against_exact(compare_output(out, ref, FP32), out, ref, exact, FP32).passed


def test_a_tail_element_beyond_the_references_largest_error_stays_wrong():
    out, ref, exact = scattered_tail()
    largest = float((ref.double() - exact).abs().max())
    out[7] += 4 * largest
    check = recheck_against_exact(compare_output(out, ref, FP32), out, ref, exact, FP32)
    assert not check.passed and "still outside" in check.message


def tf32_population_tail(program_sensitive, program_scale, boost=1.0, seed=3):
    """A well-conditioned output on the tf32 track whose TF32 rounding is amplified on a few
    hundred elements (KernelBench's UNet-softmax on an H100: PyTorch's TF32 run has 1173 of 1M
    elements past 8x its RMS error): PyTorch's track result with 500 such elements at error scale
    0.05, the program with `program_sensitive` of its own at `program_scale`, its largest error
    then multiplied by `boost`. Returns out, ref (strict FP32), on_track, exact."""
    n = 200000
    g = torch.Generator().manual_seed(seed)
    exact = torch.randn(n, generator=g, dtype=torch.float64)
    def rounded(sensitive, scale):
        noise = torch.full_like(exact, 1e-3)
        noise[sensitive] = scale
        return exact + noise * torch.randn(n, generator=g, dtype=torch.float64)
    ref = (exact + 1e-7 * torch.randn(n, generator=g, dtype=torch.float64)).float()
    on_track = rounded(torch.arange(0, n, n // 500), 0.05).float()
    out = rounded(torch.arange(7, n, n // program_sensitive), program_scale)
    worst = int((out - exact).abs().argmax())
    out[worst] = exact[worst] + boost * (out[worst] - exact[worst])
    return out.float(), ref, on_track, exact


def tail_of(values, exact, on_track):
    """The elements of `values` past the tf32 recheck's allowance (8x PyTorch's RMS error on the
    track): their count, squared errors' sum and largest error."""
    noise_rms = (on_track.double() - exact).pow(2).mean().sqrt()
    limit = TF32.atol + TF32.rtol * exact.abs() + REFERENCE_NOISE_FACTOR * noise_rms
    error = (values.double() - exact).abs()
    past = error > limit
    return int(past.sum()), float(error[past].pow(2).sum()), float(error.max())


def test_a_population_tail_is_held_to_the_references_by_count_and_energy():
    out, ref, on_track, exact = tf32_population_tail(400, 0.05, boost=1.5)
    count, energy, largest = tail_of(out, exact, on_track)
    track_count, track_energy, track_largest = tail_of(on_track, exact, on_track)
    # The premise: a population tail no longer than PyTorch's, a largest error past PyTorch's,
    # squared errors within TAIL_ENERGY_FACTOR of PyTorch's tail's.
    assert TAIL_POPULATION <= count <= track_count
    assert largest > track_largest and energy <= TAIL_ENERGY_FACTOR * track_energy
    check = compare_output(out, ref, TF32)
    assert not check.passed and check.mismatches > 0
    recheck_against_exact(check, out, ref, exact, TF32, track_reference=on_track)
    assert check.passed, check.message
    assert "squared errors' sum" in check.message


def test_a_population_tail_with_more_energy_than_the_references_stays_wrong():
    # Fewer elements past the allowance than PyTorch's, but each far worse: a wrong program.
    out, ref, on_track, exact = tf32_population_tail(150, 0.4)
    count, energy, _ = tail_of(out, exact, on_track)
    track_count, track_energy, _ = tail_of(on_track, exact, on_track)
    assert count <= track_count and energy > TAIL_ENERGY_FACTOR * track_energy
    check = recheck_against_exact(compare_output(out, ref, TF32), out, ref, exact, TF32,
                                  track_reference=on_track)
    assert not check.passed and "their squared errors sum to" in check.message


def test_a_handful_of_tail_elements_keeps_the_largest_error_rule():
    # Below TAIL_POPULATION the energy does not excuse an element past the reference's largest
    # error (the fp32 tail of test_a_tail_element_beyond_the_references_largest_error_stays_wrong).
    out, ref, exact = scattered_tail()
    largest = float((ref.double() - exact).abs().max())
    assert int(outside_allowance(ref, ref, exact).sum()) < TAIL_POPULATION
    out[7] += 1.2 * largest
    check = recheck_against_exact(compare_output(out, ref, FP32), out, ref, exact, FP32)
    assert not check.passed and "squared errors sum" not in check.message
