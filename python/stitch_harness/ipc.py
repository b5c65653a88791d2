"""CUDA IPC export of judge-owned buffers (verify-protocol.md, slots.json), and opening them.

Every exported tensor gets its own cuMemAlloc allocation rather than a block of PyTorch's caching
allocator: an IPC handle maps the whole allocation it belongs to, so a slot that shared a segment with
a reference output would hand the runner that output too (HACKS rows 8 and 24). Offsets are therefore
0, but the slots.json field stays for exporters that sub-allocate.

`FakeIpcExporter` hands out CPU tensors with made-up handles, for CPU-only tests of everything that
writes or reads slots.json.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Protocol, Sequence

import torch

from . import judge_cuda_driver as driver


def contiguous_strides(shape: Sequence[int]) -> list[int]:
    strides = []
    running = 1
    for size in reversed(list(shape)):
        strides.append(running)
        running *= max(int(size), 1)
    return list(reversed(strides))


def dtype_itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


@dataclasses.dataclass
class ExportedTensor:
    tensor: torch.Tensor
    ipc_handle: str  # hex of the 64-byte cudaIpcMemHandle_t / CUipcMemHandle
    offset_bytes: int = 0

    def slot_json(self) -> dict:
        return {"ipc_handle": self.ipc_handle, "offset_bytes": self.offset_bytes}


class IpcExporter(Protocol):
    device: torch.device

    def allocate(self, shape: Sequence[int], dtype: torch.dtype,
                 strides: Sequence[int] | None = None) -> ExportedTensor:
        ...


class _RawCudaMemory:
    """Owns one driver allocation (or one opened IPC mapping) and presents it to PyTorch through
    __cuda_array_interface__; PyTorch keeps this object alive as long as any tensor views it."""

    def __init__(self, ptr: int, nbytes: int, opened: bool):
        self.ptr = ptr
        self.nbytes = nbytes
        self.opened = opened
        self.__cuda_array_interface__ = {
            "shape": (nbytes,), "typestr": "|u1", "data": (ptr, False), "version": 2,
            "strides": None,
        }

    def __del__(self):
        try:
            if self.opened:
                driver.ipc_close_handle(self.ptr)
            else:
                driver.mem_free(self.ptr)
        except Exception:  # interpreter shutdown may have torn the context down already
            pass


def _as_typed_tensor(raw: _RawCudaMemory, offset_bytes: int, shape: Sequence[int],
                     dtype: torch.dtype, strides: Sequence[int] | None, device: torch.device):
    byte_view = torch.as_tensor(raw, device=device)
    itemsize = dtype_itemsize(dtype)
    if offset_bytes % itemsize:
        raise ValueError(f"offset {offset_bytes} is not a multiple of the item size {itemsize}")
    typed = byte_view.view(dtype)  # 1-D reinterpretation; bf16 has no array-interface typestr
    strides = list(strides) if strides is not None else contiguous_strides(shape)
    return typed.as_strided(list(shape), strides, offset_bytes // itemsize)


def _span_elements(shape: Sequence[int], strides: Sequence[int]) -> int:
    if any(int(s) == 0 for s in shape):
        return 0
    return 1 + sum((int(size) - 1) * int(stride) for size, stride in zip(shape, strides))


class CudaIpcExporter:
    """Allocates exportable device buffers, one driver allocation each."""

    def __init__(self, device: torch.device):
        self.device = device
        driver.ensure_torch_context(device)

    def allocate(self, shape: Sequence[int], dtype: torch.dtype,
                 strides: Sequence[int] | None = None) -> ExportedTensor:
        strides = list(strides) if strides is not None else contiguous_strides(shape)
        nbytes = max(_span_elements(shape, strides), 1) * dtype_itemsize(dtype)
        raw = _RawCudaMemory(driver.mem_alloc(nbytes), nbytes, opened=False)
        tensor = _as_typed_tensor(raw, 0, shape, dtype, strides, self.device)
        return ExportedTensor(tensor, driver.ipc_get_handle(raw.ptr).hex(), 0)


class FakeIpcExporter:
    """CPU stand-in: real tensors, deterministic fake handles. `exported` lists everything handed out,
    so a test can play the runner by writing into the tensors directly."""

    def __init__(self, device: torch.device | str = "cpu"):
        self.device = torch.device(device)
        self.exported: list[ExportedTensor] = []

    def allocate(self, shape: Sequence[int], dtype: torch.dtype,
                 strides: Sequence[int] | None = None) -> ExportedTensor:
        strides = list(strides) if strides is not None else contiguous_strides(shape)
        tensor = torch.empty_strided(list(shape), strides, dtype=dtype, device=self.device)
        handle = hashlib.sha512(f"fake-ipc-{len(self.exported)}".encode()).hexdigest()
        exported = ExportedTensor(tensor, handle, 0)
        self.exported.append(exported)
        return exported

    def find(self, ipc_handle: str) -> torch.Tensor:
        for exported in self.exported:
            if exported.ipc_handle == ipc_handle:
                return exported.tensor
        raise KeyError(ipc_handle)


def open_ipc_tensor(ipc_handle: str, offset_bytes: int, shape: Sequence[int], dtype: torch.dtype,
                    strides: Sequence[int] | None, device: torch.device) -> torch.Tensor:
    """Maps a tensor exported by another process. Each handle may be opened once per process."""
    driver.ensure_torch_context(device)
    strides = list(strides) if strides is not None else contiguous_strides(shape)
    nbytes = offset_bytes + _span_elements(shape, strides) * dtype_itemsize(dtype)
    ptr = driver.ipc_open_handle(bytes.fromhex(ipc_handle))
    raw = _RawCudaMemory(ptr, max(nbytes, 1), opened=True)
    return _as_typed_tensor(raw, offset_bytes, shape, dtype, strides, device)
