"""The few CUDA driver API calls the judge needs that PyTorch does not expose, through ctypes.

libcuda.so.1 comes with every NVIDIA driver, so this adds no dependency. Calls run in the context
that is current on the calling thread; callers make PyTorch create its primary context first
(`ensure_torch_context`), so memory allocated here is usable by PyTorch kernels and vice versa.
"""

from __future__ import annotations

import ctypes
import functools

import torch

CUDA_SUCCESS = 0
CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1
CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1
IPC_HANDLE_BYTES = 64


class CudaDriverError(RuntimeError):
    pass


class CUipcMemHandle(ctypes.Structure):
    # c_ubyte, not c_char: a c_char array reads back only up to its first NUL byte.
    _fields_ = [("reserved", ctypes.c_ubyte * IPC_HANDLE_BYTES)]


class _AccessPolicyWindow(ctypes.Structure):
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t),
                ("hit_ratio", ctypes.c_float), ("hit_prop", ctypes.c_int),
                ("miss_prop", ctypes.c_int)]


class _LaunchAttributeValue(ctypes.Union):
    # CUlaunchAttributeValue is a 64-byte union in CUDA 12 and 13.
    _fields_ = [("access_policy_window", _AccessPolicyWindow), ("pad", ctypes.c_char * 64)]


@functools.lru_cache(maxsize=1)
def _lib() -> ctypes.CDLL:
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as error:
        raise CudaDriverError(f"cannot load libcuda.so.1: {error}") from error
    lib.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    lib.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    lib.cuMemFree_v2.argtypes = [ctypes.c_uint64]
    lib.cuIpcGetMemHandle.argtypes = [ctypes.POINTER(CUipcMemHandle), ctypes.c_uint64]
    lib.cuIpcOpenMemHandle_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), CUipcMemHandle,
                                          ctypes.c_uint]
    lib.cuIpcCloseMemHandle.argtypes = [ctypes.c_uint64]
    lib.cuCtxGetCurrent.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    lib.cuCtxResetPersistingL2Cache.argtypes = []
    lib.cuStreamSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                         ctypes.POINTER(_LaunchAttributeValue)]
    return lib


def _check(result: int, what: str) -> None:
    if result != CUDA_SUCCESS:
        text = ctypes.c_char_p()
        _lib().cuGetErrorString(result, ctypes.byref(text))
        message = text.value.decode() if text.value else "unknown error"
        raise CudaDriverError(f"{what} failed: CUDA error {result} ({message})")


def ensure_torch_context(device: torch.device) -> None:
    """Makes PyTorch's primary context current on this thread (the driver calls below need it)."""
    torch.cuda.set_device(device)
    torch.empty(1, device=device)
    current = ctypes.c_void_p()
    _check(_lib().cuCtxGetCurrent(ctypes.byref(current)), "cuCtxGetCurrent")
    if not current.value:
        raise CudaDriverError("no CUDA context is current after PyTorch initialised the device")


def mem_alloc(nbytes: int) -> int:
    ptr = ctypes.c_uint64()
    _check(_lib().cuMemAlloc_v2(ctypes.byref(ptr), max(nbytes, 1)), f"cuMemAlloc({nbytes})")
    return ptr.value


def mem_free(ptr: int) -> None:
    _check(_lib().cuMemFree_v2(ptr), "cuMemFree")


def ipc_get_handle(ptr: int) -> bytes:
    handle = CUipcMemHandle()
    _check(_lib().cuIpcGetMemHandle(ctypes.byref(handle), ptr), "cuIpcGetMemHandle")
    return bytes(bytearray(handle.reserved))


def ipc_open_handle(handle: bytes) -> int:
    if len(handle) != IPC_HANDLE_BYTES:
        raise CudaDriverError(f"an IPC handle has {IPC_HANDLE_BYTES} bytes, got {len(handle)}")
    raw = CUipcMemHandle()
    ctypes.memmove(ctypes.addressof(raw), handle, IPC_HANDLE_BYTES)
    ptr = ctypes.c_uint64()
    _check(_lib().cuIpcOpenMemHandle_v2(ctypes.byref(ptr), raw, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
           "cuIpcOpenMemHandle")
    return ptr.value


def ipc_close_handle(ptr: int) -> None:
    _check(_lib().cuIpcCloseMemHandle(ptr), "cuIpcCloseMemHandle")


def reset_persisting_l2(stream_handle: int) -> None:
    """Clears the stream's access-policy window, then resets persisting L2 lines (HACKS row 14)."""
    value = _LaunchAttributeValue()
    value.access_policy_window.num_bytes = 0  # a zero-sized window disables it
    _check(_lib().cuStreamSetAttribute(ctypes.c_void_p(stream_handle),
                                       CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW,
                                       ctypes.byref(value)), "cuStreamSetAttribute")
    _check(_lib().cuCtxResetPersistingL2Cache(), "cuCtxResetPersistingL2Cache")
