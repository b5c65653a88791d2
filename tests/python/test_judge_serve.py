"""judge serve: slots.json, references held in the judge, the compare verdict, the command loop.

CPU tests play the runner through FakeIpcExporter (the slot tensors are plain CPU tensors the test
writes into); the GPU test runs a real second process that opens the CUDA IPC handles.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from test_judge_support import (TASKS_DIR, apply_marks, capture_task, gpu,  # noqa: F401
                                subprocess_env)

from stitch_harness.ipc import FakeIpcExporter
from stitch_harness.judge_serve import JudgeSession, plan_memory, tensor_fingerprint
from stitch_harness.judge_task import JudgeTask
from stitch_harness.judge_tracks import get_track

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def ssr_dir(tmp_path_factory):
    return capture_task("scale_shift_relu.py", str(tmp_path_factory.mktemp("captures")))


def counting_seeds():
    seeds = iter(range(1000, 2000))
    return lambda: next(seeds)


def make_session(graph_dir, sets=2, spot=1, track="fp32"):
    exporter = FakeIpcExporter(CPU)
    session = JudgeSession(JudgeTask(graph_dir, CPU), get_track(track), exporter, sets=sets,
                           spot_slots=spot, seed_source=counting_seeds())
    slots = session.prepare()
    return session, exporter, slots


def ssr_runner(exporter, slots, inputs, outputs):
    """The scale-shift-relu program, written independently of the judge: relu(x*scale + shift)."""
    params = {p["name"]: exporter.find(p["ipc_handle"]) for p in slots["params"]}
    x = exporter.find(inputs[0]["ipc_handle"])
    y = exporter.find(outputs[0]["ipc_handle"])
    y.copy_(torch.clamp_min(x * params["scale"] + params["shift"], 0.0))


def test_slots_json_schema(ssr_dir):
    session, exporter, slots = make_session(ssr_dir, sets=3, spot=2)
    assert slots["version"] == 1 and slots["device"] == 0 and slots["track"] == "fp32"
    assert [p["name"] for p in slots["params"]] == ["scale", "shift"]
    for entry in slots["params"]:
        assert len(entry["ipc_handle"]) == 128 and entry["offset_bytes"] == 0
        assert entry["dtype"] == "float32" and entry["shape"] == [1024] and entry["strides"] == [1]
    assert slots["inputs"] == [{"name": "x", "kind": "user", "dtype": "float32",
                                "shape": [4096, 1024], "strides": [1024, 1],
                                "distribution": "randn"}]
    assert slots["outputs"] == [{"dtype": "float32", "shape": [4096, 1024], "strides": [1024, 1]}]
    assert len(slots["check_sets"]) == 3 and len(slots["spot_slots"]) == 2
    handles = [e["ipc_handle"] for s in slots["check_sets"] + slots["spot_slots"]
               for e in s["inputs"] + s["outputs"]]
    assert len(set(handles)) == len(handles)  # every tensor its own allocation
    # Params are the captured weights; check inputs differ between sets (secret seeds).
    weights = JudgeTask(ssr_dir, CPU).params
    assert torch.equal(exporter.find(slots["params"][0]["ipc_handle"]), weights["scale"])
    x0 = exporter.find(slots["check_sets"][0]["inputs"][0]["ipc_handle"])
    x1 = exporter.find(slots["check_sets"][1]["inputs"][0]["ipc_handle"])
    assert not torch.equal(x0, x1)
    # Outputs start poisoned.
    assert torch.isnan(exporter.find(slots["check_sets"][0]["outputs"][0]["ipc_handle"])).all()
    json.dumps(slots)  # plain JSON


def test_a_permuted_view_output_is_allocated_contiguous_and_compared_by_value(tmp_path):
    """Issue 13: the reference returns a permuted view; the ABI gives the program a contiguous
    output (include/stitch/program.h), so slots.json must say so, and a program that writes the
    right values row-major passes."""
    graph_dir = capture_task("plan_permuted_output.py", str(tmp_path))
    session, exporter, slots = make_session(graph_dir, sets=1, spot=0)
    assert slots["outputs"] == [{"dtype": "float32", "shape": [4, 8, 64, 32],
                                 "strides": [16384, 2048, 32, 1]}]
    params = {p["name"]: exporter.find(p["ipc_handle"]) for p in slots["params"]}
    check_set = slots["check_sets"][0]
    x = exporter.find(check_set["inputs"][0]["ipc_handle"])
    y = exporter.find(check_set["outputs"][0]["ipc_handle"])
    assert y.is_contiguous()
    h = torch.relu(x @ params["linear.weight"].t() + params["linear.bias"])
    y.copy_(h.view(4, 64, 8, 32).permute(0, 2, 1, 3))
    result = session.compare()
    assert result["passed"], result["messages"]


def test_correct_runner_passes(ssr_dir):
    session, exporter, slots = make_session(ssr_dir, sets=2, spot=1)
    for check_set in slots["check_sets"]:
        ssr_runner(exporter, slots, check_set["inputs"], check_set["outputs"])
    spot = slots["spot_slots"][0]
    exporter.find(spot["inputs"][0]["ipc_handle"]).copy_(torch.randn(4096, 1024))
    ssr_runner(exporter, slots, spot["inputs"], spot["outputs"])
    result = session.compare()
    assert result["passed"], result["messages"]
    assert [s["passed"] for s in result["check_sets"]] == [True, True]
    assert result["spot_slots"][0]["filled"] and result["spot_slots"][0]["passed"]
    assert result["findings"] == []
    check = result["check_sets"][0]["outputs"][0]
    assert check["relative_error_norm"] < 1e-6 and check["mismatches"] == 0


def test_untouched_outputs_fail_with_nan(ssr_dir):
    session, _, _ = make_session(ssr_dir, sets=1, spot=1)
    result = session.compare()
    assert not result["passed"]
    check = result["check_sets"][0]["outputs"][0]
    assert check["nan_or_inf"] == 4096 * 1024
    assert result["spot_slots"][0]["filled"] is False


def test_wrong_spot_output_fails(ssr_dir):
    session, exporter, slots = make_session(ssr_dir, sets=1, spot=1)
    ssr_runner(exporter, slots, slots["check_sets"][0]["inputs"], slots["check_sets"][0]["outputs"])
    spot = slots["spot_slots"][0]
    exporter.find(spot["inputs"][0]["ipc_handle"]).copy_(torch.randn(4096, 1024))
    exporter.find(spot["outputs"][0]["ipc_handle"]).zero_()
    result = session.compare()
    assert result["check_sets"][0]["passed"]
    assert not result["spot_slots"][0]["passed"] and not result["passed"]


def test_reused_output_is_an_output_cache_finding(ssr_dir):
    session, exporter, slots = make_session(ssr_dir, sets=2, spot=0)
    first, second = slots["check_sets"]
    ssr_runner(exporter, slots, first["inputs"], first["outputs"])
    exporter.find(second["outputs"][0]["ipc_handle"]).copy_(
        exporter.find(first["outputs"][0]["ipc_handle"]))
    result = session.compare()
    assert not result["passed"]
    assert [f["kind"] for f in result["findings"]] == ["output_cache"]


def test_modified_inputs_are_detected(ssr_dir):
    session, exporter, slots = make_session(ssr_dir, sets=1, spot=0)
    check_set = slots["check_sets"][0]
    ssr_runner(exporter, slots, check_set["inputs"], check_set["outputs"])
    exporter.find(check_set["inputs"][0]["ipc_handle"])[7, 7] += 1.0
    result = session.compare()
    assert result["check_sets"][0]["inputs_unchanged"] is False and not result["passed"]


class BatchNormProgram:
    """conv → BatchNorm (training) → relu written independently of the judge, keeping its own
    running statistics across calls as a generated program does (docs/verify-protocol.md, "State
    updates"): each call writes the output, then the buffers' values after the call."""

    def __init__(self, exporter, slots, momentum=0.1, unbiased=True):
        self.exporter = exporter
        self.params = {p["name"]: exporter.find(p["ipc_handle"]).clone() for p in slots["params"]}
        self.momentum, self.unbiased = momentum, unbiased
        self.state = [entry["state"] for entry in slots["outputs"][1:]]

    def __call__(self, check_set):
        import torch.nn.functional as F

        p = self.params
        x = self.exporter.find(check_set["inputs"][0]["ipc_handle"])
        conv = F.conv2d(x, p["conv.weight"], p["conv.bias"], padding=1)
        y = F.batch_norm(conv, None, None, p["bn.weight"], p["bn.bias"], training=True)
        outputs = [self.exporter.find(e["ipc_handle"]) for e in check_set["outputs"]]
        outputs[0].copy_(torch.relu(y))
        m = self.momentum
        var = conv.var(dim=(0, 2, 3), unbiased=self.unbiased)
        p["bn.running_mean"].mul_(1 - m).add_(m * conv.mean(dim=(0, 2, 3)))
        p["bn.running_var"].mul_(1 - m).add_(m * var)
        p["bn.num_batches_tracked"].add_(1)
        for name, out in zip(self.state, outputs[1:]):
            out.copy_(p[name])


def test_training_mode_batchnorm_reference_and_running_statistics(tmp_path):
    graph_dir = capture_task("conv_bn_relu.py", str(tmp_path / "captures"))
    session, exporter, slots = make_session(graph_dir, sets=2, spot=0)
    assert [o.get("state") for o in slots["outputs"]] == [
        None, "bn.running_mean", "bn.running_var", "bn.num_batches_tracked"]
    assert slots["outputs"][3]["dtype"] == "int64" and slots["outputs"][3]["shape"] == []
    program = BatchNormProgram(exporter, slots)
    for check_set in slots["check_sets"]:
        program(check_set)
    result = session.compare()
    assert result["passed"], result["check_sets"]
    # Set 0 (the first call) is checked with its state; set 1's state has moved on, not checked.
    assert [len(s["outputs"]) for s in result["check_sets"]] == [4, 1]


def running_statistics_program(unbiased=True, momentum_2d=0.3, cumulative=True):
    """plan_bn_running_stats.py written independently of the judge, one call from the captured state:
    (output, then each buffer after the call); the arguments make it wrong on purpose."""
    import torch.nn.functional as F

    def run(p, x):
        bn2d = F.batch_norm(x, None, None, p["bn2d.weight"], p["bn2d.bias"], training=True)
        h = F.linear(torch.relu(bn2d).flatten(1), p["linear.weight"], p["linear.bias"])
        y = F.batch_norm(h, None, None, p["bn1d.weight"], p["bn1d.bias"], training=True)
        state = {}
        for name, value, dims, m in (("bn2d", x, (0, 2, 3), momentum_2d),
                                     ("bn1d", h, (0,), 1.0 if cumulative else 0.1)):
            var = value.var(dim=dims, unbiased=unbiased)
            state[f"{name}.running_mean"] = (1 - m) * p[f"{name}.running_mean"] + m * value.mean(dims)
            state[f"{name}.running_var"] = (1 - m) * p[f"{name}.running_var"] + m * var
            state[f"{name}.num_batches_tracked"] = p[f"{name}.num_batches_tracked"] + 1
        return y, state
    return run


@pytest.mark.parametrize("wrong", [None, "biased_variance", "momentum", "cumulative"])
def test_running_statistics_are_checked_after_the_first_call(tmp_path, wrong):
    graph_dir = capture_task("plan_bn_running_stats.py", str(tmp_path / "captures"))
    session, exporter, slots = make_session(graph_dir, sets=1, spot=0)
    program = running_statistics_program(unbiased=wrong != "biased_variance",
                                         momentum_2d=0.5 if wrong == "momentum" else 0.3,
                                         cumulative=wrong != "cumulative")
    params = {p["name"]: exporter.find(p["ipc_handle"]) for p in slots["params"]}
    check_set = slots["check_sets"][0]
    y, state = program(params, exporter.find(check_set["inputs"][0]["ipc_handle"]))
    outputs = [exporter.find(e["ipc_handle"]) for e in check_set["outputs"]]
    outputs[0].copy_(y)
    for entry, out in zip(slots["outputs"][1:], outputs[1:]):
        out.copy_(state[entry["state"]])
    result = session.compare()
    checks = result["check_sets"][0]["outputs"]
    assert len(checks) == 7 and checks[0]["passed"]
    assert result["passed"] == (wrong is None), checks


def noise_running_mean_program(momentum=0.1):
    """plan_bn_noise_running_mean.py written independently of the judge: the batch means summed
    channel-major (another order of additions than PyTorch's), so the second BatchNorm's running
    mean, exactly 0, comes out as different rounding noise than the reference's."""
    import torch.nn.functional as F

    def run(p, x):
        state = {}

        def batch_norm(name, value):
            channels = value.shape[1]
            rows = value.transpose(0, 1).reshape(channels, -1)
            mean = rows.sum(dim=1) / rows.shape[1]
            var = rows.var(dim=1, unbiased=True)
            for stat, batch in (("running_mean", mean), ("running_var", var)):
                state[f"{name}.{stat}"] = (1 - momentum) * p[f"{name}.{stat}"] + momentum * batch
            state[f"{name}.num_batches_tracked"] = p[f"{name}.num_batches_tracked"] + 1
            return F.batch_norm(value, None, None, p[f"{name}.weight"], p[f"{name}.bias"],
                                training=True)

        y = batch_norm("bn_project", F.conv2d(x, p["project.weight"], padding=1))
        y = batch_norm("bn_expand", F.conv2d(y, p["expand.weight"]))
        return F.relu6(y), state
    return run


@pytest.mark.parametrize("wrong", [None, "momentum"])
def test_a_running_mean_of_rounding_noise_is_settled_against_fp64(tmp_path, wrong):
    graph_dir = capture_task("plan_bn_noise_running_mean.py", str(tmp_path / "captures"))
    session, exporter, slots = make_session(graph_dir, sets=1, spot=0)
    program = noise_running_mean_program(momentum=0.3 if wrong else 0.1)
    params = {p["name"]: exporter.find(p["ipc_handle"]) for p in slots["params"]}
    check_set = slots["check_sets"][0]
    y, state = program(params, exporter.find(check_set["inputs"][0]["ipc_handle"]))
    outputs = [exporter.find(e["ipc_handle"]) for e in check_set["outputs"]]
    outputs[0].copy_(y)
    for entry, out in zip(slots["outputs"][1:], outputs[1:]):
        out.copy_(state[entry["state"]])
    result = session.compare()
    checks = result["check_sets"][0]["outputs"]
    assert len(checks) == 7
    assert result["passed"] == (wrong is None), checks
    if wrong is None:  # the noise output did fail against FP32 and was settled against FP64
        assert any("the FP32 reference's own rounding" in c["message"] for c in checks), checks
    else:  # the first BatchNorm's running mean is no noise: a wrong momentum shows
        assert not all(c["passed"] for c in checks[1:4])


def test_fingerprint_sees_a_single_byte():
    t = torch.randn(1000)
    before = tensor_fingerprint(t)
    t.view(torch.uint8)[1234] ^= 1
    assert tensor_fingerprint(t) != before


def test_random_inputs_use_the_captured_graph(tmp_path):
    task = tmp_path / "noisy_task.py"
    task.write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                return x * 2.0 + torch.rand_like(x)

        def get_inputs():
            return [torch.randn(64, 32)]

        def get_init_inputs():
            return []
    """))
    graph_dir = capture_task(str(task), str(tmp_path / "captures"))
    session, exporter, slots = make_session(graph_dir, sets=2, spot=0)
    assert [i["kind"] for i in slots["inputs"]] == ["user", "random"]
    assert slots["inputs"][1]["distribution"] == "rand"
    for check_set in slots["check_sets"]:
        x = exporter.find(check_set["inputs"][0]["ipc_handle"])
        noise = exporter.find(check_set["inputs"][1]["ipc_handle"])
        assert 0.0 <= float(noise.min()) and float(noise.max()) < 1.0
        exporter.find(check_set["outputs"][0]["ipc_handle"]).copy_(x * 2.0 + noise)
    result = session.compare()
    assert result["passed"], result["messages"]


def _serve_command(graph_dir, work_dir, device, fake):
    command = [sys.executable, "-m", "stitch_harness.judge", "serve", "--graph-dir", graph_dir,
               "--work-dir", work_dir, "--track", "fp32", "--sets", "2", "--spot-slots", "1",
               "--device", device]
    return command + (["--fake-ipc"] if fake else [])


def test_serve_command_loop_keeps_stdout_clean(tmp_path):
    source = open(os.path.join(TASKS_DIR, "scale_shift_relu.py")).read()
    task = tmp_path / "chatty_task.py"
    task.write_text("print('a task that prints at import')\n" + source.replace(
        "return torch.relu(x * self.scale + self.shift)",
        "print('and in forward')\n        return torch.relu(x * self.scale + self.shift)"))
    graph_dir = capture_task(str(task), str(tmp_path / "captures"))
    work_dir = str(tmp_path / "work")
    proc = subprocess.run(_serve_command(graph_dir, work_dir, "cpu", True),
                          input='{"cmd":"compare"}\nnot json\n{"cmd":"nope"}\n{"cmd":"exit"}\n',
                          capture_output=True, text=True, env=subprocess_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]  # every line is JSON
    assert [e["event"] for e in events] == ["ready", "compared", "error", "error", "bye"]
    assert events[0]["slots"] == os.path.join(work_dir, "slots.json")
    assert os.listdir(work_dir) == ["slots.json"]  # no reference output written anywhere
    assert events[1]["result"]["passed"] is False  # nobody filled the outputs
    assert "a task that prints" in proc.stderr


def test_serve_reports_setup_failure(tmp_path):
    proc = subprocess.run(_serve_command(str(tmp_path), str(tmp_path / "w"), "cpu", True),
                          input="", capture_output=True, text=True, env=subprocess_env(),
                          timeout=120)
    assert proc.returncode == 1
    event = json.loads(proc.stdout.strip().splitlines()[-1])
    assert event["event"] == "error" and "setup failed" in event["message"]


RUNNER_SCRIPT = textwrap.dedent("""
    import json, sys
    import torch
    from stitch_harness.ipc import open_ipc_tensor
    from stitch_harness.judge_task import DTYPES
    slots = json.load(open(sys.argv[1]))
    honest = sys.argv[2] == "honest"
    dev = torch.device("cuda", slots["device"])
    def tensor(entry, ref):
        return open_ipc_tensor(ref["ipc_handle"], ref["offset_bytes"], entry["shape"],
                               DTYPES[entry["dtype"]], entry["strides"], dev)
    params = {p["name"]: tensor(p, p) for p in slots["params"]}
    def run(s, fresh):
        x = tensor(slots["inputs"][0], s["inputs"][0])
        y = tensor(slots["outputs"][0], s["outputs"][0])
        if fresh:
            x.copy_(torch.randn(x.shape, device=dev))
        y.copy_(torch.relu(x * params["scale"] + params["shift"]) if honest else torch.zeros_like(y))
    for s in slots["check_sets"]:
        run(s, False)
    for s in slots["spot_slots"]:
        run(s, True)
    torch.cuda.synchronize()
""")


@apply_marks(gpu)
@pytest.mark.parametrize("behaviour", ["honest", "zeros"])
def test_serve_with_cuda_ipc_and_a_runner_process(ssr_dir, tmp_path, behaviour):
    work_dir = str(tmp_path / "work")
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER_SCRIPT)
    judge = subprocess.Popen(_serve_command(ssr_dir, work_dir, "cuda", False),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env=subprocess_env())
    try:
        ready = json.loads(judge.stdout.readline())
        assert ready["event"] == "ready", ready
        slots_path = os.path.join(work_dir, "slots.json")
        subprocess.run([sys.executable, str(runner), slots_path, behaviour], check=True,
                       env=subprocess_env(), timeout=300)
        judge.stdin.write('{"cmd":"compare"}\n')
        judge.stdin.flush()
        compared = json.loads(judge.stdout.readline())
        judge.stdin.write('{"cmd":"exit"}\n')
        judge.stdin.flush()
        assert json.loads(judge.stdout.readline())["event"] == "bye"
        assert judge.wait(timeout=60) == 0
    finally:
        if judge.poll() is None:
            judge.kill()
    result = compared["result"]
    assert result["passed"] is (behaviour == "honest"), result["messages"]
    assert all(s["filled"] for s in result["spot_slots"])


GIB = 2**30


def test_memory_plan_keeps_the_requested_sets_when_they_fit():
    plan = plan_memory(64 << 20, 64 << 20, 138 * GIB, 3, 2, 4)
    assert (plan.sets, plan.spot_slots, plan.timing_sets) == (3, 2, 4)
    assert plan.note == ""
    assert plan.need_bytes <= plan.budget_bytes


def test_memory_plan_gives_up_timing_then_spot_then_check_sets_for_gigabyte_tensors():
    # KernelBench level 1's elementwise tasks: a 6 GiB input and a 6 GiB output on an H200.
    plan = plan_memory(6 * GIB, 6 * GIB, 138 * GIB, 3, 2, 4)
    assert (plan.sets, plan.spot_slots, plan.timing_sets) == (2, 1, 2)
    assert plan.need_bytes <= plan.budget_bytes
    assert "2 check sets (of 3)" in plan.note and "2 timing sets (of 4)" in plan.note
    # Half the size fits as asked; a third more gives up a spot slot and a timing set more.
    plan = plan_memory(3 * GIB, 3 * GIB, 138 * GIB, 3, 2, 4)
    assert (plan.sets, plan.spot_slots, plan.timing_sets) == (3, 2, 4)
    plan = plan_memory(8 * GIB, 8 * GIB, 138 * GIB, 3, 2, 4)
    assert (plan.sets, plan.spot_slots, plan.timing_sets) == (2, 0, 1)
    assert plan.need_bytes <= plan.budget_bytes


def test_memory_plan_that_cannot_fit_says_so_at_the_minimum():
    plan = plan_memory(40 * GIB, 40 * GIB, 138 * GIB, 3, 2, 4)
    assert (plan.sets, plan.spot_slots, plan.timing_sets) == (1, 0, 1)
    assert "an allocation may fail" in plan.note


def test_elementwise_failures_get_the_fp64_second_opinion(ssr_dir):
    session, exporter, slots = make_session(ssr_dir, sets=1, spot=0)
    check_set = slots["check_sets"][0]
    ssr_runner(exporter, slots, check_set["inputs"], check_set["outputs"])
    out = exporter.find(check_set["outputs"][0]["ipc_handle"])
    out.view(-1)[:5] += 1e-3  # outside atol of the FP32 reference at 5 elements
    calls = []

    def exact_agreeing_with_the_program(inputs):
        calls.append(len(inputs))
        return [out.double().clone()]

    session.task.reference_exact = exact_agreeing_with_the_program
    result = session.compare()
    assert calls == [1], "computed once, for the failing set"
    assert result["passed"], result["messages"]
    check = result["check_sets"][0]["outputs"][0]
    assert check["exact_reference_elements"] == 5 and check["mismatches"] == 0

    # Without an FP64 reference (an op that has none) the FP32 verdict stands.
    def no_fp64(inputs):
        raise RuntimeError("not implemented for 'Double'")

    session.task.reference_exact = no_fp64
    result = session.compare()
    assert not result["passed"]
    assert result["check_sets"][0]["outputs"][0]["mismatches"] == 5


def test_an_error_norm_failure_gets_the_fp64_second_opinion(ssr_dir):
    session, exporter, slots = make_session(ssr_dir, sets=1, spot=0)
    check_set = slots["check_sets"][0]
    ssr_runner(exporter, slots, check_set["inputs"], check_set["outputs"])
    out = exporter.find(check_set["outputs"][0]["ipc_handle"])
    out.mul_(1 + 3e-4)  # the error norm 3e-4 against the FP32 reference: over the fp32 bound
    assert not session.compare()["passed"]

    # An FP64 reference that says the FP32 one is the noisy answer (its own relative error 3e-4)
    # and the program the exact one: the norm is judged against it and passes.
    session.task.reference_exact = lambda inputs: [out.double().clone()]
    result = session.compare()
    assert result["passed"], result["messages"]
    assert "the FP32 reference's own rounding" in result["check_sets"][0]["outputs"][0]["message"]


def test_an_output_undecided_on_every_check_set_fails(ssr_dir):
    # An FP64 reference that puts the FP32 one 1% off (past the conditioning cap) and a program 2%
    # off the other way: within 8x the reference's error on every element and in norm, so each
    # check passes, undecided. Only a check that decides may pass the output.
    session, exporter, slots = make_session(ssr_dir, sets=2, spot=0)
    session.task.reference_exact = lambda inputs: [
        r.double() * (1 - 1e-2) for r in session.task.reference(inputs)]
    outs = []
    for check_set in slots["check_sets"]:
        ssr_runner(exporter, slots, check_set["inputs"], check_set["outputs"])
        outs.append(exporter.find(check_set["outputs"][0]["ipc_handle"]))
        outs[-1].mul_(1 + 2e-2)
    result = session.compare()
    assert not result["passed"]
    assert all(s["passed"] for s in result["check_sets"])
    assert all(s["outputs"][0]["undecided"] for s in result["check_sets"])
    assert any(m.startswith("output 0: undecided") for m in result["messages"]), result["messages"]

    # Check set 1 right: it passes on its own FP32 reference, which decides the output.
    outs[1].div_(1 + 2e-2)
    result = session.compare()
    assert result["passed"], result["messages"]
    assert [s["outputs"][0]["undecided"] for s in result["check_sets"]] == [True, False]


def test_a_passing_set_never_computes_the_fp64_reference(ssr_dir):
    session, exporter, slots = make_session(ssr_dir, sets=1, spot=0)
    check_set = slots["check_sets"][0]
    ssr_runner(exporter, slots, check_set["inputs"], check_set["outputs"])

    def must_not_run(inputs):
        raise AssertionError("FP64 reference computed for a passing set")

    session.task.reference_exact = must_not_run
    assert session.compare()["passed"]


def test_a_loose_track_recheck_takes_pytorchs_result_on_the_track_when_one_is_needed(ssr_dir):
    session, exporter, slots = make_session(ssr_dir, sets=1, spot=0, track="tf32")
    check_set = slots["check_sets"][0]
    ssr_runner(exporter, slots, check_set["inputs"], check_set["outputs"])
    out = exporter.find(check_set["outputs"][0]["ipc_handle"])
    calls = []

    def on_track_agreeing_with_the_program(inputs, track):
        calls.append(track.name)
        return [out.clone()]

    session.task.reference_on_track = on_track_agreeing_with_the_program
    assert session.compare()["passed"] and calls == [], "no recheck, no track reference"

    # 5 elements off the strict and the FP64 reference, as PyTorch on the track is: PyTorch's own
    # tail there, so they pass; computed once for the failing set.
    out.view(-1)[:5] += 0.5
    session.task.reference_exact = lambda inputs: [
        r.double() for r in session.task.reference(inputs)]
    result = session.compare()
    assert calls == ["tf32"]
    assert result["passed"], result["messages"]

    # Without PyTorch's result on the track the strict reference alone sizes the allowance.
    def no_track_reference(inputs, track):
        raise RuntimeError("autocast failed")

    session.task.reference_on_track = no_track_reference
    assert not session.compare()["passed"]


def test_reference_on_a_loose_track_has_the_strict_references_types(tmp_path):
    # Training-mode BatchNorm: the running statistics follow the user output, from the captured
    # state on every call. bf16 autocast works on the CPU too.
    task = JudgeTask(capture_task("plan_bn_noise_running_mean.py", str(tmp_path)), CPU)
    inputs = task.draw_inputs(1234)
    strict = task.reference(inputs)
    tf32 = task.reference_on_track(inputs, get_track("tf32"))
    bf16 = task.reference_on_track(inputs, get_track("bf16"))
    assert len(strict) == len(tf32) == len(bf16) == 7
    for s, t, b in zip(strict, tf32, bf16):
        assert s.dtype == t.dtype == b.dtype and s.shape == t.shape == b.shape
    assert strict[0].dtype == torch.float32 and not torch.equal(strict[0], bf16[0])
    assert torch.allclose(bf16[0], strict[0], atol=0.1, rtol=0.1)
    assert all(torch.equal(a, b) for a, b in zip(task.reference(inputs), strict))


def test_fp64_reference_of_a_task_is_close_to_its_fp32_reference(ssr_dir):
    task = JudgeTask(ssr_dir, CPU)
    inputs = task.draw_inputs(1234)
    fp32, = task.reference(inputs)
    fp64, = task.reference_exact(inputs)
    assert fp64.dtype == torch.float64 and fp64.shape == fp32.shape
    assert torch.allclose(fp64.float(), fp32, atol=1e-5, rtol=1e-5)
