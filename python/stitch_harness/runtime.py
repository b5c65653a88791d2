"""Process-wide setup shared by the subcommands: quiet torch's warnings and logs (the CLI promises
one error line on failure) and size the CPU thread pool."""
import logging
import os
import warnings


def quiet_torch():
    warnings.filterwarnings("ignore")
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
    for name in ("torch", "torch._dynamo", "torch._export", "torch.export", "torch.fx",
                 "torch._subclasses", "torch.fx.experimental.symbolic_shapes"):
        logging.getLogger(name).setLevel(logging.ERROR)


def import_torch(threads=None):
    """Import torch (and the export machinery capture uses) once; returns the torch module."""
    quiet_torch()
    import torch
    # Imported here, before capture-batch forks, so that no child pays for them (torch._dynamo alone
    # takes over a second, and FakeTensorMode imports it lazily).
    import torch._dynamo  # noqa: F401
    import torch._subclasses.fake_tensor  # noqa: F401
    import torch.export  # noqa: F401
    import torch.export._trace  # noqa: F401
    import safetensors.torch  # noqa: F401

    if threads:
        torch.set_num_threads(threads)
    quiet_torch()  # torch's import may have installed handlers and filters of its own
    return torch
