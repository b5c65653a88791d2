"""Fake-tensor rules for the recurrent ops capture keeps whole (aten.lstm / gru / rnn_tanh / rnn_relu).

torch.export computes the metadata of these ops by running torch's Python decomposition on fake
tensors: every time step of every layer, 30-50 s for a KernelBench LSTM/GRU, once in export and
again in run_decompositions. Worse, torch 2.11's decomposition gives LSTM's h_n and c_n an extra
dimension ([layers, 1, batch, hidden]). These rules give the shapes and strides the ATen kernel
produces, directly: output is (seq, batch, directions * hidden) in memory, viewed as (batch, seq, ...)
when batch_first; h_n / c_n are contiguous with the shape of h_0 / c_0.

Two places reach the decomposition, so both are covered while `fast_rnn_metadata()` is active:
the Python-dispatcher kernels torch registers for the Autograd and CompositeImplicitAutograd keys
(export's tracing resolves the CPU key to the latter), which are wrapped to answer fake tensors with
the rule, and FakeTensorMode's own dispatch (a meta_table entry makes it skip the decomposition and
use the registered fake rule).
"""
import contextlib

import torch
import torch._decomp
from torch._subclasses import fake_impls
from torch._subclasses.fake_tensor import FakeTensor

aten = torch.ops.aten
# Keys where torch registers its Python decomposition of these ops as a Python-dispatcher kernel.
_WRAPPED_KEYS = (torch._C.DispatchKey.Autograd, torch._C.DispatchKey.CompositeImplicitAutograd)


def _output(fake_mode, data, hidden_size, bidirectional, batch_first):
    if data.dim() != 3:
        raise RuntimeError(f"recurrent op with a {data.dim()}-D input: only 3-D inputs are supported")
    seq, batch = (data.shape[1], data.shape[0]) if batch_first else (data.shape[0], data.shape[1])
    features = hidden_size * (2 if bidirectional else 1)
    with fake_mode:
        output = torch.empty((seq, batch, features), dtype=data.dtype, device=data.device)
        return output.transpose(0, 1) if batch_first else output


def _like_contiguous(fake_mode, tensor):
    with fake_mode:
        return torch.empty(tuple(tensor.shape), dtype=tensor.dtype, device=tensor.device)


def _lstm(fake_mode, func, data, hx, params, has_biases, num_layers, dropout, train, bidirectional,
          batch_first):
    h0, c0 = hx
    output = _output(fake_mode, data, h0.shape[-1], bidirectional, batch_first)
    return output, _like_contiguous(fake_mode, h0), _like_contiguous(fake_mode, c0)


def _single_state_rnn(fake_mode, func, data, hx, params, has_biases, num_layers, dropout, train,
                      bidirectional, batch_first):
    output = _output(fake_mode, data, hx.shape[-1], bidirectional, batch_first)
    return output, _like_contiguous(fake_mode, hx)


RULES = {
    aten.lstm.input: _lstm,
    aten.gru.input: _single_state_rnn,
    aten.rnn_tanh.input: _single_state_rnn,
    aten.rnn_relu.input: _single_state_rnn,
}


def _register_fake_rules():
    for op, rule in RULES.items():
        torch._decomp.meta_table.setdefault(op, rule)
        # export deregisters the fake rules of the ops it preserves when it finishes: re-register.
        if not fake_impls._is_op_registered_to_fake_rule(op):
            fake_impls.register_op_impl(op)(rule)


def _fake_aware_kernel(op, rule, original):
    def kernel(*args, **kwargs):
        data = args[0]
        if isinstance(data, FakeTensor):
            return rule(data.fake_mode, op, *args, **kwargs)
        return original(*args, **kwargs)

    return kernel


@contextlib.contextmanager
def fast_rnn_metadata():
    """While active, tracing an RNN op on fake tensors costs one rule call, not seq x layers cells."""
    _register_fake_rules()
    saved = {}
    for op, rule in RULES.items():
        for key in _WRAPPED_KEYS:
            original = op.py_kernels.get(key)
            if original is not None:
                saved[(op, key)] = original
                op.py_kernels[key] = _fake_aware_kernel(op, rule, original)
        op._dispatch_cache.clear()
    try:
        yield
    finally:
        for (op, key), original in saved.items():
            op.py_kernels[key] = original
            op._dispatch_cache.clear()
