"""Writes index.json: fixtures for Kiln's layout and indexing ops.

Run with Debian's interpreter: /usr/bin/python3 testdata/gen_index.py

Each case holds its inputs (x, a, b, index, src, mask, ...) and its expected
outputs (out, or out0, out1, ... for ops returning several tensors). The
Go tests (layout_ops_test.go, indexing_test.go) apply the op named by the
case with the same parameters. Slices with negative steps, which PyTorch
forbids, are computed with NumPy's slicing.
"""
import numpy as np
import torch
import torch.nn.functional as F

from fixtures import dump

torch.manual_seed(0)


def rnd(*shape):
    return torch.randn(*shape)


def ar(*shape, dtype=torch.float32):
    n = 1
    for s in shape:
        n *= s
    return torch.arange(n, dtype=dtype).reshape(*shape)


cases = {}


def case(name, out, **inputs):
    c = dict(inputs)
    if isinstance(out, (list, tuple)):
        for i, o in enumerate(out):
            c["out%d" % i] = o
        c["count"] = torch.tensor(len(out))
    else:
        c["out"] = out
    cases[name] = c


# ---- Flatten / Unflatten ----
x = rnd(2, 3, 4)
case("flatten_all", x.flatten(0, -1), x=x)
x = rnd(2, 3, 4, 5)
case("flatten_mid", x.flatten(1, 2), x=x)
case("flatten_neg", x.flatten(-2, -1), x=x)
x = rnd(3, 4, 2)
case("flatten_permuted", x.permute(2, 0, 1).flatten(1, 2), x=x)  # Go permutes first
case("flatten_permuted_mergeable", x.permute(2, 0, 1).flatten(0, 0), x=x)
case("flatten_scalar", torch.tensor(3.5).flatten(), x=torch.tensor(3.5))
x = rnd(2, 12)
case("unflatten", x.unflatten(1, (3, -1)), x=x)

# ---- Repeat ----
x = rnd(2, 3)
case("repeat_more_dims", x.repeat(2, 1, 2), x=x)
case("repeat_same_rank", x.repeat(3, 2), x=x)
case("repeat_zero", x.repeat(0, 2), x=x)
case("repeat_transposed", x.t().repeat(2, 2), x=x)  # Go transposes first
xi = ar(2, 2, dtype=torch.int64)
case("repeat_int", xi.repeat(1, 3), x=xi)

# ---- Flip ----
x = rnd(2, 3, 4)
case("flip_0_2", x.flip(0, 2), x=x)
case("flip_neg", x.flip(-1), x=x)
case("flip_all", x.flip(0, 1, 2), x=x)
case("flip_sliced", x[:, 1:, ::2].flip(1), x=x)  # Go slices first

# ---- Roll ----
x = ar(3, 4)
case("roll_0", x.roll(1, 0), x=x)
case("roll_neg_wrap", x.roll(-5, 1), x=x)
case("roll_transposed", x.t().roll(2, 0), x=x)
case("roll_chain", x.roll((1, -2), (0, 1)), x=x)
case("roll_flat", x.roll(3), x=x)

# ---- Narrow / Slice / Select ----
x = rnd(4, 5)
case("narrow", x.narrow(1, 1, 3), x=x)
case("narrow_neg_start", x.narrow(0, -2, 2), x=x)
case("narrow_empty", x.narrow(1, 5, 0), x=x)
v = ar(10)
npv = v.numpy()
case("slice_step", v[2:8:2], x=v)
case("slice_neg_start", v[-3:], x=v)
case("slice_neg_end_step", v[:-2:3], x=v)
case("slice_clamped_empty", v[100:200], x=v)
case("slice_backwards_empty", v[7:3], x=v)
case("slice_reverse", torch.from_numpy(npv[::-1].copy()), x=v)
case("slice_neg_step", torch.from_numpy(npv[8:2:-2].copy()), x=v)
case("slice_neg_both", torch.from_numpy(npv[-1:-4:-1].copy()), x=v)
case("slice_neg_clamped", torch.from_numpy(npv[50:-50:-3].copy()), x=v)
x = rnd(3, 6)
case("slice_dim1", x[:, 1::2], x=x)
case("slice_dim1_neg_step", torch.from_numpy(x.numpy()[:, 4::-2].copy()), x=x)
case("slice_transposed", x.t()[1:5:3], x=x)
case("select", x.select(1, -1), x=x)
case("select_0", x.select(0, 2), x=x)
case("unbind", list(x.unbind(1)), x=x)

# ---- Chunk / Split ----
x = rnd(5, 2)
case("chunk_uneven", list(x.chunk(3, 0)), x=x)
x = rnd(2, 6)
case("chunk_fewer", list(x.chunk(4, -1)), x=x)
x = rnd(6, 3)
case("split_sizes", list(x.split([1, 2, 3], 0)), x=x)
x = rnd(7, 2)
case("split_every", list(x.split(3, 0)), x=x)
case("split_every_zero_piece", list(x.split([7, 0], 0)), x=x)
x = torch.zeros(0, 2)
case("chunk_empty_dim", list(x.chunk(3, 0)), x=x)
case("split_every_empty_dim", list(x.split(2, 0)), x=x)

# ---- Cat / Stack ----
a, b = rnd(2, 3), rnd(1, 3)
case("cat_0", torch.cat([a, b], 0), a=a, b=b)
a, b, c = rnd(2, 1), rnd(2, 3), rnd(2, 2)
case("cat_neg", torch.cat([a, b, c], -1), a=a, b=b, c=c)
a, b = rnd(2, 3), ar(2, 2, dtype=torch.int64)
case("cat_promote", torch.cat([a, b], 1), a=a, b=b)
a, b = rnd(3, 2), rnd(2, 2)
case("cat_transposed", torch.cat([a.t(), b], 1), a=a, b=b)  # Go transposes a
a, b = rnd(2, 3), torch.zeros(0)
case("cat_legacy_empty", torch.cat([a, b, a], 0), a=a, b=b)
a, b, c = rnd(2, 3), rnd(2, 3), rnd(2, 3)
case("stack_0", torch.stack([a, b, c], 0), a=a, b=b, c=c)
case("stack_1", torch.stack([a, b, c], 1), a=a, b=b, c=c)
case("stack_neg", torch.stack([a, b, c], -1), a=a, b=b, c=c)
bi = ar(2, 3, dtype=torch.int64)
case("stack_promote", torch.stack([a, bi], 0), a=a, b=bi)

# ---- Pad ----
x = rnd(2, 3)
case("pad_constant", F.pad(x, (1, 2), value=0.5), x=x)
x = rnd(2, 3, 4)
case("pad_constant_2d", F.pad(x, (1, 1, 2, 0)), x=x)
case("pad_constant_crop", F.pad(x, (-1, 2, 0, -2), value=-1.0), x=x)
case("pad_constant_all_dims", F.pad(x, (0, 1, 1, 0, 1, 1), value=3.0), x=x)
x = rnd(1, 2, 4)
case("pad_reflect", F.pad(x, (2, 3), mode="reflect"), x=x)
case("pad_reflect_crop", F.pad(x, (-1, 2), mode="reflect"), x=x)
x = rnd(1, 1, 4, 5)
case("pad_reflect_2d", F.pad(x, (1, 2, 3, 1), mode="reflect"), x=x)
x = rnd(1, 2, 3)
case("pad_replicate", F.pad(x, (2, 3), mode="replicate"), x=x)
x = rnd(1, 1, 3, 4)
case("pad_replicate_2d", F.pad(x, (1, 2, 2, 1), mode="replicate"), x=x)
x = rnd(1, 2, 4)
case("pad_circular", F.pad(x, (1, 3), mode="circular"), x=x)
x = rnd(3, 4)
case("pad_reflect_any_rank", torch.from_numpy(np.pad(x.numpy(), ((1, 2), (2, 1)), mode="reflect")), x=x)
case("pad_edge_any_rank", torch.from_numpy(np.pad(x.numpy(), ((0, 0), (3, 2)), mode="edge")), x=x)

# ---- Gather / Scatter ----
x = rnd(3, 4)
idx = torch.tensor([[0, 3], [1, 1], [2, 0]])
case("gather_1", x.gather(1, idx), x=x, index=idx)
idx = torch.tensor([[2, 0, 1, 1], [0, 0, 2, 1]])
case("gather_0", x.gather(0, idx), x=x, index=idx)
idx = torch.tensor([[3, 0], [2, 2]])
case("gather_neg_smaller", x.gather(-1, idx), x=x, index=idx)
x3 = rnd(2, 3, 4)
idx = torch.randint(0, 3, (2, 2, 4))
case("gather_3d", x3.gather(1, idx), x=x3, index=idx)
case("gather_transposed", x.t().gather(1, torch.tensor([[0], [2], [1], [0]])), x=x,
     index=torch.tensor([[0], [2], [1], [0]]))
case("gather_empty", x.gather(1, torch.zeros(3, 0, dtype=torch.int64)), x=x,
     index=torch.zeros(3, 0, dtype=torch.int64))

x = rnd(3, 5)
idx = torch.tensor([[0, 1, 2, 0], [2, 0, 0, 1]])
src = rnd(2, 5)
case("scatter_0", x.scatter(0, idx, src), x=x, index=idx, src=src)
idx = torch.tensor([[4, 0], [1, 3], [2, 2]])
src = rnd(3, 3)
case("scatter_1", x.scatter(1, idx[:, :1].contiguous(), src), x=x, index=idx[:, :1].contiguous(), src=src)
case("scatter_value", x.scatter(-1, idx[:, :1].contiguous(), 7.5), x=x, index=idx[:, :1].contiguous())
idx = torch.tensor([[0, 1, 0, 0, 2], [0, 1, 1, 2, 2]])
src = rnd(2, 5)
case("scatter_add_dups", x.scatter_add(0, idx, src), x=x, index=idx, src=src)
idx = torch.tensor([[1, 1], [0, 4], [3, 3]])
src = rnd(3, 4)
case("scatter_add_1", x.scatter_add(1, idx, src), x=x, index=idx, src=src)

# ---- IndexSelect ----
x = rnd(4, 3)
idx = torch.tensor([3, 0, 0, 2])
case("index_select_0", x.index_select(0, idx), x=x, index=idx)
idx = torch.tensor([2, 2])
case("index_select_1", x.index_select(1, idx), x=x, index=idx)
idx = torch.zeros(0, dtype=torch.int64)
case("index_select_empty", x.index_select(0, idx), x=x, index=idx)
idx = torch.tensor([1, 3])
case("index_select_transposed", x.t().index_select(1, idx), x=x, index=idx)
idx = torch.tensor(1)
case("index_select_scalar_index", x.index_select(1, idx), x=x, index=idx)
xi = ar(3, 2, dtype=torch.int64)
idx = torch.tensor([2, 0])
case("index_select_int", xi.index_select(0, idx), x=xi, index=idx)

# ---- MaskedFill / Where ----
x = rnd(3, 4)
mask = torch.tensor([[True], [False], [True]])
case("masked_fill_broadcast", x.masked_fill(mask, -2.5), x=x, mask=mask)
mask = torch.rand(3, 4) > 0.5
case("masked_fill_full", x.masked_fill(mask, 1e9), x=x, mask=mask)
x1 = rnd(4)
case("masked_fill_grows", x1.masked_fill(mask, 0.0), x=x1, mask=mask)
cond = torch.tensor([[True], [False], [True]])
a, b = rnd(1, 4), rnd(3, 4).double()
case("where_broadcast_promote", torch.where(cond, a, b), cond=cond, a=a, b=b)
cond = torch.rand(2, 3) > 0.4
a, b = ar(2, 3, dtype=torch.int64), rnd(3)
case("where_int_float", torch.where(cond, a, b), cond=cond, a=a, b=b)

# ---- Nonzero / OneHot ----
x = torch.tensor([[0.0, 1.5, 0.0, -2.0], [0.0, 0.0, 0.0, 0.0], [3.0, 0.0, 0.0, 1.0]])
case("nonzero_2d", torch.nonzero(x), x=x)
x = torch.tensor([False, True, True, False, True])
case("nonzero_bool", torch.nonzero(x), x=x)
x = torch.zeros(2, 3)
case("nonzero_none", torch.nonzero(x), x=x)
x = torch.tensor([[0, 2], [4, 1], [3, 3]])
case("one_hot_5", F.one_hot(x, 5), x=x)
case("one_hot_infer", F.one_hot(x, -1), x=x)

dump("index", cases)
