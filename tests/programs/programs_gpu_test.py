"""GPU check of the hand-written programs in tests/programs/ against their PyTorch tasks.

Each program is built with nvcc (or taken prebuilt from $STITCH_PROGRAMS_DIR/<name>.so), loaded with
ctypes through the program ABI (include/stitch/program.h) and compared with the task's Model run on
the same GPU with TF32 off (the fp32 track). This is a developer check of the programs themselves;
the real verification path (judge + stitch-runner) is elsewhere. Skips without a CUDA device.
"""
import ctypes
import importlib.util
import os
import pathlib
import shutil
import subprocess

import pytest

torch = pytest.importorskip("torch")

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "programs"
TASKS = ROOT / "tests" / "tasks"
LIBRARIES = {"scale_shift_relu": [], "mlp": ["cublasLt"], "conv_bn_relu": ["cudnn"]}

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

MAX_RANK = 8
DTYPES = {torch.float32: 0, torch.float64: 1, torch.float16: 2, torch.bfloat16: 3, torch.int64: 4,
          torch.int32: 5, torch.int16: 6, torch.int8: 7, torch.uint8: 8, torch.bool: 9}


class StitchTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_RANK), ("strides", ctypes.c_int64 * MAX_RANK)]


def to_stitch(tensor):
    t = StitchTensor()
    t.data = tensor.data_ptr()
    t.dtype = DTYPES[tensor.dtype]
    t.rank = tensor.dim()
    for i, (size, stride) in enumerate(zip(tensor.shape, tensor.stride())):
        t.shape[i] = size
        t.strides[i] = stride
    return t


def tensor_array(tensors):
    array = (StitchTensor * max(1, len(tensors)))()
    for i, tensor in enumerate(tensors):
        array[i] = to_stitch(tensor)
    return array


def load_task(name):
    spec = importlib.util.spec_from_file_location(name, TASKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_program(name, out_dir):
    prebuilt = os.environ.get("STITCH_PROGRAMS_DIR")
    if prebuilt:
        return pathlib.Path(prebuilt) / f"{name}.so"
    nvcc = os.environ.get("NVCC") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    major, minor = torch.cuda.get_device_capability()
    output = out_dir / f"{name}.so"
    command = [nvcc, "-shared", "-Xcompiler", "-fPIC", "-O3", "-std=c++17", "-cudart", "shared",
               f"-arch=sm_{major}{minor}", f"-I{ROOT / 'include'}", str(PROGRAMS / f"{name}.cu"),
               "-o", str(output)] + [f"-l{lib}" for lib in LIBRARIES[name]]
    subprocess.run(command, check=True)
    return output


class Program:
    """One loaded program: init on params, forward on a torch stream, destroy."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(str(path))
        self.lib.stitch_init.argtypes = [ctypes.POINTER(StitchTensor), ctypes.c_int,
                                         ctypes.POINTER(ctypes.c_void_p)]
        self.lib.stitch_forward.argtypes = [ctypes.c_void_p, ctypes.POINTER(StitchTensor),
                                            ctypes.c_int, ctypes.POINTER(StitchTensor),
                                            ctypes.c_int, ctypes.c_void_p]
        self.lib.stitch_destroy.argtypes = [ctypes.c_void_p]
        self.lib.stitch_last_error.argtypes = [ctypes.c_void_p]
        self.lib.stitch_last_error.restype = ctypes.c_char_p
        assert self.lib.stitch_abi_version() == 1
        self.state = ctypes.c_void_p()

    def init(self, params):
        array = tensor_array(params)
        status = self.lib.stitch_init(array, len(params), ctypes.byref(self.state))
        return status, self.lib.stitch_last_error(None).decode()

    def forward(self, inputs, outputs):
        stream = torch.cuda.current_stream().cuda_stream
        status = self.lib.stitch_forward(self.state, tensor_array(inputs), len(inputs),
                                         tensor_array(outputs), len(outputs), stream)
        torch.cuda.synchronize()
        return status, self.lib.stitch_last_error(self.state).decode()

    def destroy(self):
        self.lib.stitch_destroy(self.state)


def exported_params(model, inputs):
    """Params in graph.json order: the order torch.export lists parameters and buffers."""
    exported = torch.export.export(model, tuple(inputs), strict=False)
    state = dict(model.named_parameters())
    state.update(dict(model.named_buffers()))
    names = [spec.target for spec in exported.graph_signature.input_specs
             if spec.kind.name in ("PARAMETER", "BUFFER")]
    return names, [state[name].detach().clone().contiguous() for name in names]


def reference(model, inputs):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    with torch.no_grad():
        return model(*inputs)


def relative_error(out, ref):
    return ((out.double() - ref.double()).norm() / ref.double().norm().clamp_min(1e-30)).item()


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("programs")


def check_case(program, model, inputs, label):
    ref = reference(model, inputs)
    out = torch.full_like(ref, float("nan"))
    status, error = program.forward(inputs, [out])
    assert status == 0, f"{label}: forward failed: {error}"
    rel = relative_error(out, ref)
    print(f"{label}: relative error norm {rel:.3e}, max abs {(out - ref).abs().max().item():.3e}")
    assert torch.isfinite(out).all(), f"{label}: non-finite output"
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)
    # FP32 level: TF32 math would give ~1e-4..1e-3 on these shapes.
    assert rel < 1e-5, f"{label}: relative error norm {rel:.3e} is above FP32 level"
    again = torch.full_like(ref, float("nan"))
    status, error = program.forward(inputs, [again])
    assert status == 0, error
    assert torch.equal(out, again), f"{label}: two runs on the same inputs differ"
    return out


@pytest.mark.parametrize("name", sorted(LIBRARIES))
def test_program_matches_reference(name, build_dir):
    torch.manual_seed(0)
    task = load_task(name)
    model = task.Model(*task.get_init_inputs()).cuda().train()
    inputs = [x.cuda() for x in task.get_inputs()]
    names, params = exported_params(model, inputs)
    print(f"{name}: params {names}")
    reference(model, inputs)  # loads the libraries the program links (cuBLASLt, cuDNN) by soname
    program = Program(build_program(name, build_dir))
    status, error = program.init(params)
    assert status == 0, f"init failed: {error}"
    del params  # the program must not keep pointers to the params it was given
    torch.cuda.empty_cache()
    try:
        check_case(program, model, inputs, f"{name} task shapes")
        # Another batch size (and spatial size for the convolution), read from the tensors.
        other = [x[: max(1, x.shape[0] // 2 - 1)].clone() for x in inputs]
        if name == "conv_bn_relu":
            other = [other[0][:, :, :15, :13].contiguous()]
        check_case(program, model, other, f"{name} other shapes")
        # An input that is not 256-byte aligned, as a sub-allocation through IPC can be.
        unaligned = []
        for x in inputs:
            block = torch.empty(x.numel() + 1, device="cuda")
            view = block[1:].view(x.shape)
            view.copy_(x)
            unaligned.append(view)
        check_case(program, model, unaligned, f"{name} unaligned input")
    finally:
        program.destroy()


@pytest.mark.parametrize("name", sorted(LIBRARIES))
def test_program_reports_bad_params(name, build_dir):
    task = load_task(name)
    model = task.Model(*task.get_init_inputs()).cuda()
    program = Program(build_program(name, build_dir))
    params = [p.detach() for p in model.parameters()][:1]
    status, error = program.init(params)
    assert status != 0
    assert error, "stitch_last_error(NULL) is empty after a failed init"
    print(f"{name}: bad params -> status {status}: {error}")
