# Own task (Planner golden, issue 16): the inter-chunk state recurrence of a chunked state-space
# scan (Mamba2's SSD), small. The chunk decays pad(cumsum(A)[..., -1], (1, 0)) come from a param:
# the pad's copied piece runs at init while its zero piece is written by the forward, so the pad's
# buffer must be persistent (in the arena the forward's other buffers overwrote it: NaN states).
import torch
import torch.nn as nn
import torch.nn.functional as F


def segsum(x):
    length = x.size(-1)
    x_cumsum = torch.cumsum(x, dim=-1)
    x_segsum = x_cumsum[..., :, None] - x_cumsum[..., None, :]
    mask = torch.tril(torch.ones(length, length, device=x.device, dtype=bool), diagonal=0)
    return x_segsum.masked_fill(~mask, -torch.inf)


class Model(nn.Module):
    def __init__(self, batch, chunks, chunk, heads, d_state):
        super().__init__()
        self.chunk = chunk
        self.A = nn.Parameter(torch.randn(batch, chunks * chunk, heads))
        self.B = nn.Parameter(torch.randn(batch, chunks * chunk, heads, d_state))

    def forward(self, X):
        b, length, h, p = X.shape
        c = length // self.chunk
        X_blocks = X.reshape(b, c, self.chunk, h, p)
        B_blocks = self.B.reshape(b, c, self.chunk, h, -1)
        A_blocks = self.A.reshape(b, c, self.chunk, h).permute(0, 3, 1, 2)
        A_cumsum = torch.cumsum(A_blocks, dim=-1)
        decay_states = torch.exp(A_cumsum[:, :, :, -1:] - A_cumsum)
        states = torch.einsum("bclhn,bhcl,bclhp->bchpn", B_blocks, decay_states, X_blocks)
        states = torch.cat([torch.zeros_like(states[:, :1]), states], dim=1)
        decay_chunk = torch.exp(segsum(F.pad(A_cumsum[:, :, :, -1], (1, 0))))
        return torch.einsum("bhzc,bchpn->bzhpn", decay_chunk, states)[:, :-1]


batch, chunks, chunk, heads, d_head, d_state = 4, 3, 16, 4, 32, 8


def get_inputs():
    return [torch.rand(batch, chunks * chunk, heads, d_head)]


def get_init_inputs():
    return [batch, chunks, chunk, heads, d_state]
