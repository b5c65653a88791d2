#!/usr/bin/env python3
"""PyTorch's side of tests/kernels/rnn_bench.cu: the same recurrent networks, shapes and maths
(strict FP32: cuDNN TF32 off; tf32: on), one forward captured in a CUDA graph and replayed, L2
flushed before every replay, median milliseconds. Run it on the GPU beside rnn_bench so the two
tables share a machine and a run:

    python3 tests/kernels/rnn_torch_bench.py
"""
import torch

WARMUPS, ITERATIONS = 3, 20

# name, cell, seq_len, batch, input, hidden, layers, bidirectional, batch_first
SHAPES = [
    ("35_LSTM_6x512x10x128x256", torch.nn.LSTM, 512, 10, 128, 256, 6, False, True),
    ("35_LSTM_seq_major", torch.nn.LSTM, 512, 10, 128, 256, 6, False, False),
    ("39_GRU_6x512x10x128x256", torch.nn.GRU, 512, 10, 128, 256, 6, False, False),
    ("gru_bidirectional_6x512x10x128x256", torch.nn.GRU, 512, 10, 128, 256, 6, True, False),
    ("lstm_1x128x64x512x512", torch.nn.LSTM, 128, 64, 512, 512, 1, False, False),
    ("rnn_tanh_2x256x8x1024x256", torch.nn.RNN, 256, 8, 1024, 256, 2, False, False),
]


def graphed_ms(module, x, flush):
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.no_grad():
        for _ in range(2):
            module(x)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        module(x)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(WARMUPS + ITERATIONS):
        flush.fill_(i)
        start.record()
        graph.replay()
        stop.record()
        stop.synchronize()
        if i >= WARMUPS:
            times.append(start.elapsed_time(stop))
    return sorted(times)[len(times) // 2]


def main():
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    print(f"{'shape':<28} {'math':<5} {'torch graph ms':>14}")
    for name, cell, seq, batch, inp, hidden, layers, bidi, batch_first in SHAPES:
        for tf32 in (False, True):
            torch.backends.cudnn.allow_tf32 = tf32
            torch.backends.cuda.matmul.allow_tf32 = tf32
            module = cell(inp, hidden, layers, batch_first=batch_first,
                          bidirectional=bidi).cuda().eval()
            shape = (batch, seq, inp) if batch_first else (seq, batch, inp)
            x = torch.rand(shape, device="cuda")
            print(f"{name:<28} {'tf32' if tf32 else 'fp32':<5} {graphed_ms(module, x, flush):14.3f}")


if __name__ == "__main__":
    main()
