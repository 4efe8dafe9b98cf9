"""GroupNorm, InstanceNorm, BatchNorm and L2 over any dim in simdnorm.torch (and
simdnorm.group_norm for NumPy) against torch's own functions computed in
float64: float32 results within the registry's bound (scaled fp32 ulps),
16-bit ones within half an ulp more (group_norm's 16-bit results are the
float32 result rounded once, SIMDNORM_FAST_ROUNDING)."""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import simdnorm  # noqa: E402
import simdnorm.torch as st  # noqa: E402
from bounds import ulp  # noqa: E402

@pytest.fixture(autouse=True)
def _own_random_state():
    """Leaves torch's global random state as it was: the other test files
    draw their data from it (pytest may run them in this process)."""
    with torch.random.fork_rng():
        torch.manual_seed(18)
        yield


NAMES = {torch.float32: "float32", torch.bfloat16: "bfloat16",
         torch.float16: "float16"}
DTYPES = list(NAMES)


def _limit(exact, xhat, weight, bias, dtype, kind):
    """The f32 bound (plus half a 16-bit ulp) per element; weight and bias
    float64 arrays broadcasting against exact."""
    bound = simdnorm.op(kind).f32_bound
    g = 1.0 if weight is None else np.abs(weight)
    b = 0.0 if bias is None else np.abs(bias)
    limit = bound * 2.0**-23 * (g * np.maximum(1.0, np.abs(xhat)) + b)
    if dtype != torch.float32:
        limit = limit + 0.5 * ulp(exact, NAMES[dtype])
    return limit * (1 + 2.0**-30)


def _assert_within(y, exact, xhat, weight=None, bias=None, kind="groupnorm"):
    values = y.detach().double().numpy()
    exact = exact.detach().numpy()
    limit = _limit(exact, xhat.detach().numpy(), weight, bias, y.dtype, kind)
    err = np.abs(values - exact)
    bad = ~(err <= limit)
    assert not bad.any(), (f"{bad.sum()} of {bad.size} out of the bound; "
                           f"worst {(err / limit)[bad].max():.2f}x")


def _channel(p, dim):
    """A per-channel parameter as float64, shaped to broadcast over an
    (N, C, *spatial) tensor of `dim` dimensions."""
    if p is None:
        return None
    return p.double().numpy().reshape((-1,) + (1,) * (dim - 2))


def _params(c, dtype, g):
    w = (torch.rand(c, generator=g) + 0.5).to(dtype)
    b = (torch.rand(c, generator=g) - 0.5).to(dtype)
    return w, b


def _group_xhat(xd, groups, eps):
    """F.group_norm's xhat in float64 by two passes (ATen's float64
    group_norm takes E[x^2] - E[x]^2, which loses digits when the mean is
    large against the deviation: the hard data below)."""
    g = xd.reshape(xd.shape[0], groups, -1)
    d = g - g.mean(-1, keepdim=True)
    var = (d * d).mean(-1, keepdim=True)
    return (d / torch.sqrt(var + eps)).reshape(xd.shape)


def _check_group(x, groups, w, b, eps=1e-5):
    y = st.group_norm(x, groups, w, b, eps)
    assert y.dtype == x.dtype and y.shape == x.shape
    xd = x.double()
    xhat = _group_xhat(xd, groups, eps)
    view = (-1,) + (1,) * (x.dim() - 2)
    exact = xhat * (1 if w is None else w.double().view(view)) + (
        0 if b is None else b.double().view(view))
    if x.dim() > 2 and abs(x.double().mean().item()) < 100:
        torch.testing.assert_close(  # ATen agrees on easy data
            exact, F.group_norm(xd, groups, None if w is None else w.double(),
                                None if b is None else b.double(), eps))
    _assert_within(y, exact, xhat, _channel(w, x.dim()), _channel(b, x.dim()))
    return y


SHAPES = [((2, 6, 5, 7), 3), ((3, 4, 1), 2), ((2, 4, 9), 4),
          ((1, 4, 2, 3, 5), 2), ((1, 64, 16, 16), 32), ((2, 8), 8)]


@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
@pytest.mark.parametrize("shape,groups", SHAPES, ids=str)
def test_group_norm_against_float64(shape, groups, dtype):
    g = torch.Generator().manual_seed(1)
    x = (torch.randn(shape, generator=g) * 3 + 1).to(dtype)
    w, b = _params(shape[1], dtype, g)
    _check_group(x, groups, w, b)
    _check_group(x, groups, None, None)
    _check_group(x, groups, w.float(), b.float())  # float32 weights
    if len(shape) in (4, 5):
        fmt = torch.channels_last if len(shape) == 4 else \
            torch.channels_last_3d
        xl = x.to(memory_format=fmt)
        before = xl.clone()
        y = _check_group(xl, groups, w, b)
        assert y.is_contiguous(memory_format=fmt)
        assert y.stride() == xl.stride()
        assert torch.equal(xl, before)  # input untouched


def test_group_norm_hard_data():
    # mean 1e4, sd 1e-2: torch's float32 loses digits here; we compare
    # with float64 and hold ours to the bound.
    g = torch.Generator().manual_seed(2)
    x = 1e4 + 1e-2 * torch.randn(2, 8, 6, 6, generator=g, dtype=torch.float64)
    x = x.float()
    w, b = _params(8, torch.float32, g)
    for t in (x, x.to(memory_format=torch.channels_last)):
        _check_group(t, 4, w, b)


def test_group_norm_other_layouts_are_copied_correctly():
    g = torch.Generator().manual_seed(3)
    base = torch.randn(2, 6, 8, 10, generator=g)
    w, b = _params(6, torch.float32, g)
    for x in (base[:, :, :, ::2], base.transpose(2, 3), base[:, ::2]):
        groups = 3 if x.shape[1] == 6 else 1
        _check_group(x, groups, w if groups == 3 else None,
                     b if groups == 3 else None)


@pytest.mark.skipif(st._group_call is None,
                    reason="built without torch's C++ headers")
def test_group_norm_common_call_agrees_with_python_path():
    # The C++ common call (_torch_core.group_norm) and the Python path give
    # the same bits and memory format, and decline (None) what they must.
    g = torch.Generator().manual_seed(11)
    base = torch.randn(2, 8, 5, 3, generator=g)
    w, b = _params(8, torch.float32, g)
    cases = [(base, w, b), (base.to(memory_format=torch.channels_last), w, b),
             (base.reshape(2, 8, 15), None, b), (base.bfloat16(), w, None),
             (base.half(), w.half(), b.half()), (base.bfloat16(), w, b),
             (base[:1].to(memory_format=torch.channels_last), None, None),
             (_channels_last(base.reshape(2, 8, 15)), w, b)]
    for x, wt, bt in cases:
        for flags in (0, simdnorm._core.FAST_ROUNDING):
            got = st._group_call(x, 4, wt, bt, 1e-5, flags)
            want = st._group_norm("t", x, 4, wt, bt, 1e-5,
                                  fast_rounding=flags != 0)
            assert got.dtype == want.dtype and got.shape == want.shape
            assert got.stride() == want.stride(), (x.shape, x.stride())
            assert torch.equal(got, want) or torch.equal(
                got.isnan(), want.isnan())
    x = base.clone()
    for args in ((x[:, :, :, ::2], 4), (x, 3), (x, True), (x, 4.0),
                 (x.double(), 4), (x.transpose(2, 3), 4)):
        assert st._group_call(*args, None, None, 1e-5, 0) is None, args
    assert st._group_call(x, 4, w, b.half(), 1e-5, 0) is None
    assert st._group_call(x, 4, w.requires_grad_(), b, 1e-5, 0) is None
    assert st._group_call(x, 4, None, None, -1.0, 0) == \
        simdnorm._core.INVALID_ARGUMENT


def test_group_norm_bad_inputs_raise():
    x = torch.randn(2, 6, 4)
    with pytest.raises(ValueError, match="does not divide"):
        st.group_norm(x, 4)
    with pytest.raises(ValueError, match="weight has shape"):
        st.group_norm(x, 3, torch.ones(5))
    with pytest.raises(TypeError, match="int64"):
        st.group_norm(torch.ones(2, 6, 4, dtype=torch.int64), 3)
    with pytest.raises(ValueError, match="eps|INVALID"):
        st.group_norm(x, 3, eps=-1.0)
    with pytest.raises(ValueError):
        st.group_norm(torch.randn(6), 3)


def _channels_last(t):
    return t.movedim(1, -1).contiguous().movedim(-1, 1)


@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
@pytest.mark.parametrize("form", ["group", "instance", "module"])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_group_norm_autograd_matches_float64(dtype, form, layout):
    # dx, dweight and dbias of simdnorm_group_norm_backward against torch's
    # autograd of F.group_norm in float64 on the same inputs: within the
    # fp32 bound (docs/accuracy.md, "Backward": 128 2^-23 of the terms,
    # which the largest gradient bounds here) plus one rounding to a 16-bit
    # dtype, relative to the largest gradient.
    g = torch.Generator().manual_seed(7)
    n, c, groups = 2, 6, 3 if form != "instance" else 6
    x = (torch.randn(n, c, 5, 4, generator=g) * 2 + 3).to(dtype)
    w = (1 + 0.5 * torch.randn(c, generator=g)).to(dtype)
    b = torch.randn(c, generator=g).to(dtype)
    dy = torch.randn(n, c, 5, 4, generator=g).to(dtype)
    if layout == "channels_last":
        x, dy = _channels_last(x), _channels_last(dy)
    leaves = [t.clone().requires_grad_() for t in (x, w, b)]
    if form == "group":
        y = st.group_norm(leaves[0], groups, leaves[1], leaves[2], 1e-5)
    elif form == "instance":
        y = st.instance_norm(leaves[0], weight=leaves[1], bias=leaves[2])
    else:
        m = st.GroupNorm(groups, c).to(dtype)
        with torch.no_grad():
            m.weight.copy_(w)
            m.bias.copy_(b)
        leaves[1], leaves[2] = m.weight, m.bias
        y = m(leaves[0])
    y.backward(dy)
    exact = [t.detach().double().requires_grad_() for t in (x, w, b)]
    F.group_norm(exact[0], groups, exact[1], exact[2], 1e-5).backward(
        dy.double())
    tol = 128 * 2.0**-23 if dtype == torch.float32 else 2.0**-6
    for got, want in zip(leaves, exact):
        assert got.grad.dtype == dtype and got.grad.shape == want.grad.shape
        err = (got.grad.double() - want.grad).abs().max()
        assert err <= tol * want.grad.abs().max(), (form, dtype, float(err))


@pytest.mark.parametrize("form", ["group", "instance", "batch"])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_channel_autograd_reuses_saved_statistics(form, layout, monkeypatch):
    # The forward saves each group's (channel's, BatchNorm training) mean
    # and rstd, and the backward hands them to the library (no statistics
    # pass). On data 1e4 + N(0, 1) / 100 the fp32 mean is 5 % of a
    # deviation off; the backward removes that (docs/accuracy.md, "Saved
    # statistics"), so the gradients stay within the fp32 bound of float64
    # autograd's.
    name = "batch_norm_backward" if form == "batch" else "group_norm_backward"
    calls = []
    original = getattr(simdnorm._core, name)

    def spy(*args):
        calls.append(args[-2:])
        return original(*args)

    monkeypatch.setattr(simdnorm._core, name, spy)
    g = torch.Generator().manual_seed(13)
    n, c, groups = 3, 8, 4 if form == "group" else 8
    x = 1e4 + torch.randn(n, c, 5, 6, generator=g) / 100
    w = 1 + 0.5 * torch.randn(c, generator=g)
    b = torch.randn(c, generator=g)
    dy = torch.randn(n, c, 5, 6, generator=g)
    if layout == "channels_last":
        x, dy = _channels_last(x), _channels_last(dy)
    leaves = [t.clone().requires_grad_() for t in (x, w, b)]
    # The float64 truth from contiguous tensors: torch 1.13's channels-last
    # GroupNorm misses its own float64 by ~600 2^-23 of the largest dx here
    # (its one-pass variance: E[x^2] - E[x]^2 at mean 1e4, sd 1e-2).
    exact = [t.detach().double().contiguous().requires_grad_()
             for t in (x, w, b)]
    if form == "batch":
        st.batch_norm(leaves[0], None, None, leaves[1], leaves[2],
                      True).backward(dy)
        wants, limits = _batch_grad_exact(x, torch.zeros(c), torch.ones(c), w,
                                          b, dy, True, 1e-5)
        for got, want, limit in zip(leaves, wants, limits):
            _assert_grad_within(got.grad, want, limit)
    else:
        st.group_norm(leaves[0], groups, leaves[1], leaves[2]).backward(dy)
        F.group_norm(exact[0], groups, exact[1], exact[2]).backward(
            dy.double().contiguous())
        for got, want in zip(leaves, exact):
            err = (got.grad.double() - want.grad).abs().max()
            assert err <= 128 * 2.0**-23 * want.grad.abs().max(), (form, err)
    assert len(calls) == 1 and all(calls[0]), calls


def test_group_norm_autograd_details():
    # Only the weight requires grad; no weight at all; a strided input (a
    # copy); no_grad and inference_mode give the forward's bits.
    g = torch.Generator().manual_seed(9)
    x = torch.randn(2, 4, 3, 5, generator=g)[:, :, :, :4]
    w = torch.ones(4, requires_grad=True)
    y = st.group_norm(x, 2, w)
    y.square().sum().backward()
    ref = w.detach().double().requires_grad_()
    F.group_norm(x.double(), 2, ref).square().sum().backward()
    assert x.grad is None
    torch.testing.assert_close(w.grad.double(), ref.grad, rtol=1e-5,
                               atol=1e-5)
    leaf = x.clone().requires_grad_()
    st.instance_norm(leaf).sum().backward()  # dx of sum(y) is ~0
    assert leaf.grad.abs().max() < 1e-5
    with torch.no_grad():
        y0 = st.group_norm(x, 2, w)
    with torch.inference_mode():
        torch.testing.assert_close(st.group_norm(x, 2, w), y0, rtol=0, atol=0)
    torch.testing.assert_close(y.detach(), y0, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
def test_instance_norm_and_running_stats_match_torch(dtype):
    g = torch.Generator().manual_seed(4)
    x = (torch.randn(3, 5, 4, 6, generator=g) * 2 + 3).to(dtype)
    w, b = _params(5, dtype, g)
    rm, rv = torch.rand(5, generator=g), torch.rand(5, generator=g) + 0.5
    ours_m, ours_v, their_m, their_v = rm.clone(), rv.clone(), rm.clone(), \
        rv.clone()
    y = st.instance_norm(x, ours_m, ours_v, w, b, True, 0.3, 1e-5)
    F.instance_norm(x.float(), their_m, their_v, w.float(), b.float(), True,
                    0.3, 1e-5)
    torch.testing.assert_close(ours_m, their_m, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(ours_v, their_v, rtol=1e-5, atol=1e-6)
    xd = x.double()
    exact = F.instance_norm(xd, None, None, w.double(), b.double(), eps=1e-5)
    xhat = F.instance_norm(xd, eps=1e-5)
    _assert_within(y, exact, xhat, _channel(w, 4), _channel(b, 4))
    # The running statistics instead of the input's (BatchNorm inference).
    y = st.instance_norm(x, rm, rv, w, b, use_input_stats=False)
    expected = F.instance_norm(xd, rm.double(), rv.double(), w.double(),
                               b.double(), use_input_stats=False)
    xhat = F.instance_norm(xd, rm.double(), rv.double(),
                           use_input_stats=False)
    _assert_within(y, expected, xhat, _channel(w, 4), _channel(b, 4),
                   kind="batchnorm")
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        st.instance_norm(torch.randn(2, 3, 1))


def _batch_exact(x, rm, rv, w, b, training, momentum=0.1, eps=1e-5):
    """(exact y, xhat, running_mean, running_var) in float64: the batch's
    statistics by two passes (training) or the running ones."""
    xd = x.double()
    dims = [0] + list(range(2, x.dim()))
    view = (1, -1) + (1,) * (x.dim() - 2)
    if training:
        mean = xd.mean(dims, keepdim=True)
        d = xd - mean
        var = (d * d).mean(dims, keepdim=True)
    else:
        mean, var = rm.double().view(view), rv.double().view(view)
        d = xd - mean
    xhat = d / torch.sqrt(var + eps)
    exact = xhat * (1 if w is None else w.double().view(view)) + (
        0 if b is None else b.double().view(view))
    new_m = new_v = None
    if training and rm is not None:
        m = xd.numel() // x.shape[1]
        new_m = (1 - momentum) * rm.double() + momentum * mean.flatten()
        new_v = (1 - momentum) * rv.double() + (
            momentum * var.flatten() * m / (m - 1))
    return exact, xhat, new_m, new_v


def _check_batch(x, w, b, training, rm=None, rv=None, momentum=0.1):
    ours_m = None if rm is None else rm.clone()
    ours_v = None if rv is None else rv.clone()
    y = st.batch_norm(x, ours_m, ours_v, w, b, training, momentum, 1e-5)
    assert y.dtype == x.dtype and y.shape == x.shape
    assert y.is_contiguous() or not x.is_contiguous()
    exact, xhat, new_m, new_v = _batch_exact(x, rm, rv, w, b, training,
                                             momentum)
    _assert_within(y, exact, xhat, _channel(w, x.dim()), _channel(b, x.dim()),
                   kind="batchnorm")
    if new_m is not None:
        torch.testing.assert_close(ours_m.double(), new_m, rtol=1e-6,
                                   atol=1e-7)
        torch.testing.assert_close(ours_v.double(), new_v, rtol=1e-6,
                                   atol=1e-7)
        # torch's own update (from F.batch_norm in float64) agrees.
        their_m, their_v = rm.double(), rv.double()
        F.batch_norm(x.double(), their_m, their_v, None, None, True,
                     momentum, 1e-5)
        torch.testing.assert_close(ours_m.double(), their_m, rtol=1e-6,
                                   atol=1e-7)
        torch.testing.assert_close(ours_v.double(), their_v, rtol=1e-6,
                                   atol=1e-7)
    elif rm is not None:
        assert torch.equal(ours_m, rm) and torch.equal(ours_v, rv)
    return y


@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
@pytest.mark.parametrize("shape", [(2, 6, 5, 7), (3, 4, 9), (5, 8),
                                   (1, 4, 2, 3, 5)], ids=str)
def test_batch_norm_against_float64(shape, dtype):
    g = torch.Generator().manual_seed(7)
    c = shape[1]
    x = (torch.randn(shape, generator=g) * 3 + 1).to(dtype)
    w, b = _params(c, dtype, g)
    rm = torch.randn(c, generator=g)
    rv = torch.rand(c, generator=g) * 4 + 0.5
    for training in (False, True):
        _check_batch(x, w, b, training, rm, rv, momentum=0.3)
        _check_batch(x, w.float(), b.float(), training, rm, rv)
    _check_batch(x, None, None, True)  # batch statistics only
    if len(shape) in (4, 5):
        fmt = torch.channels_last if len(shape) == 4 else \
            torch.channels_last_3d
        xl = x.to(memory_format=fmt)
        before = xl.clone()
        for training in (False, True):
            y = _check_batch(xl, w, b, training, rm, rv)
            assert y.is_contiguous(memory_format=fmt)
        assert torch.equal(xl, before)  # input untouched
        _check_batch(x.transpose(2, 3), w, b, True, rm, rv)  # a copy


def test_batch_norm_hard_data_and_other_running_dtypes():
    g = torch.Generator().manual_seed(8)
    x = 1e4 + 1e-2 * torch.randn(4, 6, 5, 5, generator=g,
                                 dtype=torch.float64)
    x = x.float()
    w, b = _params(6, torch.float32, g)
    rm, rv = torch.full((6,), 1e4), torch.full((6,), 1e-4)
    for t in (x, x.to(memory_format=torch.channels_last)):
        _check_batch(t, w, b, True, rm, rv)
        _check_batch(t, w, b, False, rm, rv)
    # float64 and strided running statistics: through float32 temporaries,
    # copied back.
    for rm2, rv2 in ((torch.zeros(6, dtype=torch.float64),
                      torch.ones(6, dtype=torch.float64)),
                     (torch.zeros(12)[::2], torch.ones(12)[::2])):
        y = st.batch_norm(x, rm2, rv2, w, b, True, 0.5)
        mean0 = x[:, 0].double().mean().item()
        assert rm2[0].item() == pytest.approx(0.5 * mean0, rel=1e-6)
        y2 = st.batch_norm(x, rm2, rv2, w, b, False)
        assert y.shape == y2.shape


def test_batch_norm_training_couples_the_batch():
    g = torch.Generator().manual_seed(9)
    x = torch.randn(4, 3, 6, generator=g)
    rm, rv = torch.zeros(3), torch.ones(3)
    x2 = x.clone()
    x2[2] += 1.0  # another sample
    for training, coupled in ((True, True), (False, False)):
        y = st.batch_norm(x, rm.clone(), rv.clone(), training=training)
        y2 = st.batch_norm(x2, rm.clone(), rv.clone(), training=training)
        assert torch.equal(y[0], y2[0]) != coupled


def test_batch_norm_bad_inputs_raise_and_write_nothing():
    x = torch.randn(2, 6, 4)
    rm, rv = torch.zeros(6), torch.ones(6)
    cases = [
        (ValueError, "running_mean has shape",
         lambda: st.batch_norm(x, torch.zeros(5), rv, training=True)),
        (ValueError, "running_var has shape",
         lambda: st.batch_norm(x, rm, torch.ones(7), training=True)),
        (TypeError, "int64",
         lambda: st.batch_norm(torch.ones(2, 6, 4, dtype=torch.int64), rm,
                               rv, training=True)),
        (TypeError, "int64",
         lambda: st.batch_norm(x, torch.zeros(6, dtype=torch.int64), rv,
                               training=True)),
        (ValueError, "needs running_mean",
         lambda: st.batch_norm(x, None, None)),
        (ValueError, "both or neither",
         lambda: st.batch_norm(x, rm, None, training=True)),
        (ValueError, "more than 1 value per channel",
         lambda: st.batch_norm(torch.randn(1, 6), rm, rv, training=True)),
        (ValueError, "eps|INVALID",
         lambda: st.batch_norm(x, rm, rv, training=True, eps=-1.0)),
        (ValueError, "weight has shape",
         lambda: st.batch_norm(x, rm, rv, torch.ones(5), training=True)),
        (NotImplementedError, "momentum=None",
         lambda: st.batch_norm(x, rm, rv, training=True, momentum=None)),
        (NotImplementedError, "momentum=None",  # also under autograd
         lambda: st.batch_norm(x, rm, rv, torch.ones(6, requires_grad=True),
                               training=True, momentum=None)),
        (ValueError, "needs running_mean",
         lambda: st.batch_norm(x.clone().requires_grad_(), None, None)),
    ]
    for cls, match, call in cases:
        with pytest.raises(cls, match=match):
            call()
        assert torch.equal(rm, torch.zeros(6)) and torch.equal(
            rv, torch.ones(6))
    with torch.no_grad():
        st.batch_norm(x, rm, rv, torch.ones(6, requires_grad=True))


def _batch_grad_exact(x, rm, rv, w, b, dy, training, eps):
    """torch's F.batch_norm gradients in float64 (dx, dweight, dbias) and
    their bounds (docs/accuracy.md, "Backward", BatchNorm): dx within
    128 * 2^-23 * M_j in training, M_j = r |w| (|dy_j| + mean|dy| +
    (|xhat_j| + 1) mean(|dy| (|xhat| + 1))) over the channel, and within
    2 * 2^-23 |dx| in inference; dweight within 64 * 2^-23 * sum |dy|
    (|xhat| + tau), dbias 32 * 2^-23 * sum |dy| (tau = 1 in training,
    0 in inference)."""
    leaves = [t.detach().double().requires_grad_() for t in (x, w, b)]
    F.batch_norm(leaves[0], rm.double().clone(), rv.double().clone(),
                 leaves[1], leaves[2], training, 0.1, eps).backward(
                     dy.double())
    dims = [0] + list(range(2, x.dim()))
    view = (1, -1) + (1,) * (x.dim() - 2)
    xd, ady = x.double(), dy.double().abs()
    if training:
        mean = xd.mean(dims, keepdim=True)
        var = ((xd - mean) ** 2).mean(dims, keepdim=True)
    else:
        mean, var = rm.double().view(view), rv.double().view(view)
    r = 1 / torch.sqrt(var + eps)
    axhat = ((xd - mean) * r).abs()
    g = w.double().abs().view(view)
    if training:
        scale = r * g * (ady + ady.mean(dims, keepdim=True) + (axhat + 1) * (
            ady * (axhat + 1)).mean(dims, keepdim=True))
        dx_lim = 128 * 2.0**-23 * scale
    else:
        dx_lim = 2 * 2.0**-23 * (ady * g * r)
    tau = 1.0 if training else 0.0
    dw_lim = 64 * 2.0**-23 * (ady * (axhat + tau)).sum(dims)
    db_lim = 32 * 2.0**-23 * ady.sum(dims)
    return [t.grad for t in leaves], [dx_lim, dw_lim, db_lim]


def _assert_grad_within(got, want, limit, dtype=torch.float32):
    got, want = got.double(), want.detach()
    limit = limit + 2.0**-24 * want.abs()
    if dtype != torch.float32:
        limit = limit + 0.5 * torch.from_numpy(
            ulp(want.abs().numpy() + limit.numpy(), NAMES[dtype]))
    err = (got - want).abs()
    bad = ~(err <= limit * (1 + 2.0**-30))
    worst = float((err / limit)[bad].max()) if bad.any() else 0.0
    assert not bad.any(), (f"{int(bad.sum())} of {bad.numel()} out of the "
                           f"bound; worst {worst:.2f}x")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16],
                         ids=NAMES.get)
@pytest.mark.parametrize("shape", [(4, 6, 5, 3), (8, 5)], ids=str)
def test_batch_norm_autograd_matches_float64(shape, dtype):
    # dx, dweight and dbias of simdnorm_batch_norm_backward against torch's
    # autograd of F.batch_norm in float64 on the same inputs, training and
    # eval, contiguous and channels_last; the running statistics are
    # updated as without grad.
    g = torch.Generator().manual_seed(11)
    c = shape[1]
    x = (torch.randn(shape, generator=g) * 2 + 1).to(dtype)
    dy = torch.randn(shape, generator=g).to(dtype)
    w = torch.randn(c, generator=g) * 0.5 + 1
    b = torch.randn(c, generator=g)
    rm = torch.randn(c, generator=g) * 0.1 + 1
    rv = torch.rand(c, generator=g) + 3.5
    layouts = [x]
    if len(shape) == 4:
        layouts.append(x.to(memory_format=torch.channels_last))
    for xs in layouts:
        for training in (True, False):
            leaves = [t.clone().requires_grad_() for t in (xs, w, b)]
            ours_m, ours_v = rm.clone(), rv.clone()
            y = st.batch_norm(leaves[0], ours_m, ours_v, leaves[1], leaves[2],
                              training, 0.1, 1e-5)
            assert y.requires_grad
            y.backward(dy)
            wants, limits = _batch_grad_exact(xs, rm, rv, w, b, dy, training,
                                              1e-5)
            assert leaves[0].grad.dtype == dtype
            assert leaves[0].grad.shape == xs.shape
            _assert_grad_within(leaves[0].grad, wants[0], limits[0], dtype)
            _assert_grad_within(leaves[1].grad, wants[1], limits[1])
            _assert_grad_within(leaves[2].grad, wants[2], limits[2])
            with torch.no_grad():
                want_m, want_v = rm.clone(), rv.clone()
                st.batch_norm(xs, want_m, want_v, w, b, training, 0.1, 1e-5)
            assert torch.equal(ours_m, want_m) and torch.equal(ours_v, want_v)


def test_batch_norm_autograd_modules_and_instance_norm():
    # BatchNorm2d's parameters and input get torch's gradients (train and
    # eval); instance_norm(use_input_stats=False), BatchNorm's inference,
    # too.
    g = torch.Generator().manual_seed(12)
    ours, ref = st.BatchNorm2d(6), torch.nn.BatchNorm2d(6).double()
    with torch.no_grad():
        ours.weight.uniform_(0.5, 1.5, generator=g)
        ours.bias.uniform_(-0.5, 0.5, generator=g)
        ref.weight.copy_(ours.weight)
        ref.bias.copy_(ours.bias)
    x = torch.randn(3, 6, 4, 5, generator=g)
    dy = torch.randn(3, 6, 4, 5, generator=g)
    for train in (True, False):
        ours.train(train)
        ref.train(train)
        ours.zero_grad()
        ref.zero_grad()
        xo = x.clone().requires_grad_()
        xr = x.double().requires_grad_()
        ours(xo).backward(dy)
        ref(xr).backward(dy.double())
        for got, want in ((xo.grad, xr.grad),
                          (ours.weight.grad, ref.weight.grad),
                          (ours.bias.grad, ref.bias.grad)):
            torch.testing.assert_close(got.double(), want, rtol=1e-5,
                                       atol=1e-5)
        torch.testing.assert_close(ours.running_mean.double(),
                                   ref.running_mean, rtol=1e-6, atol=1e-7)
    rm, rv = torch.randn(6, generator=g), torch.rand(6, generator=g) + 0.5
    w = torch.randn(6, generator=g).requires_grad_()
    xo = x.clone().requires_grad_()
    st.instance_norm(xo, rm, rv, w, None, use_input_stats=False).backward(dy)
    xr, wr = x.double().requires_grad_(), w.detach().double().requires_grad_()
    F.instance_norm(xr, rm.double(), rv.double(), wr, None,
                    use_input_stats=False).backward(dy.double())
    torch.testing.assert_close(xo.grad.double(), xr.grad, rtol=1e-6,
                               atol=1e-7)
    torch.testing.assert_close(w.grad.double(), wr.grad, rtol=1e-5, atol=1e-6)


def test_batch_norm_modules_and_patch():
    g = torch.Generator().manual_seed(10)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 4, 3), torch.nn.BatchNorm2d(4, affine=False))
    with torch.no_grad():
        model[1].weight.uniform_(0.5, 1.5, generator=g)
        model[1].bias.uniform_(-0.5, 0.5, generator=g)
        for m in (model[1], model[4]):
            m.running_mean.uniform_(-0.2, 0.2, generator=g)
            m.running_var.uniform_(0.5, 2.0, generator=g)
    x = torch.randn(3, 3, 10, 10, generator=g)
    ours = copy.deepcopy(model)
    keys = ours.state_dict().keys()
    assert st.patch(ours) == 2
    assert isinstance(ours[1], st.BatchNorm2d)
    assert ours.state_dict().keys() == keys
    assert ours[1].running_mean.data_ptr() != model[1].running_mean.data_ptr()
    with torch.no_grad():
        model.eval()
        ours.eval()
        # Eval against float64: the last BatchNorm's input from torch's
        # first layers, the bound as above.
        h = model[:4](x)
        y = ours[4](h)
        bn = model[4]
        exact, xhat, _, _ = _batch_exact(h, bn.running_mean, bn.running_var,
                                         None, None, False)
        _assert_within(y, exact, xhat, kind="batchnorm")
        torch.testing.assert_close(ours(x), model(x), rtol=1e-5, atol=1e-5)
        xl = x.to(memory_format=torch.channels_last)
        torch.testing.assert_close(ours(xl), model(xl), rtol=1e-5, atol=1e-5)
        model.train()
        ours.train()
        torch.testing.assert_close(ours(x), model(x), rtol=1e-4, atol=1e-4)
        for a, b in zip(ours.buffers(), model.buffers()):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert ours[1].num_batches_tracked.item() == 1
    # patch shares the buffers: the patched module updates the original's.
    shared = copy.deepcopy(model)
    bn = shared[1]
    st.patch(shared)
    assert shared[1].running_mean is bn.running_mean
    with torch.no_grad():
        shared(x)
    assert bn.num_batches_tracked.item() == 2
    # momentum=None falls back to torch's cumulative average.
    m, t = st.BatchNorm1d(4, momentum=None), torch.nn.BatchNorm1d(
        4, momentum=None)
    x1 = torch.randn(6, 4, generator=g)
    with torch.no_grad():
        torch.testing.assert_close(m(x1), t(x1))
    torch.testing.assert_close(m.running_var, t.running_var)
    assert st.BatchNorm3d(2).state_dict().keys() == torch.nn.BatchNorm3d(
        2).state_dict().keys()


@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
@pytest.mark.parametrize("shape,dim", [((4, 6, 9), 1), ((4, 6, 9), 0),
                                       ((4, 6, 9), -1), ((5, 7), 1),
                                       ((2, 3, 4, 5), -3)], ids=str)
def test_normalize_any_dim(shape, dim, dtype):
    g = torch.Generator().manual_seed(5)
    x = torch.randn(shape, generator=g).to(dtype)
    y = st.normalize(x, dim=dim)
    assert y.dtype == dtype and y.shape == x.shape and y.is_contiguous()
    exact = F.normalize(x.double(), dim=dim)
    _assert_within(y, exact, exact, kind="l2norm")
    out = torch.full_like(x, 7)
    assert st.normalize(x, 2, dim, out=out) is out and torch.equal(out, y)


def test_normalize_bad_p_and_autograd():
    x = torch.randn(3, 4)
    out = torch.full_like(x, 7)
    with pytest.raises(ValueError, match=r"p=2 only \(p=1\)"):
        st.normalize(x, p=1, out=out)
    assert (out == 7).all()  # nothing written
    with pytest.raises(IndexError):
        st.normalize(x, dim=2)
    # L2 has a backward pass: any dim works under autograd.
    leaf = x.clone().requires_grad_()
    st.normalize(leaf, dim=0).sum().backward()
    ref = x.double().requires_grad_()
    F.normalize(ref, dim=0).sum().backward()
    torch.testing.assert_close(leaf.grad.double(), ref.grad, rtol=0,
                               atol=1e-5)


def test_modules_and_patch():
    g = torch.Generator().manual_seed(6)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3), torch.nn.GroupNorm(4, 8), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3), torch.nn.InstanceNorm2d(8, affine=True),
        torch.nn.InstanceNorm2d(8, affine=True, track_running_stats=True))
    for m in model.modules():
        if isinstance(m, (torch.nn.GroupNorm, torch.nn.InstanceNorm2d)):
            with torch.no_grad():
                m.weight.uniform_(0.5, 1.5, generator=g)
                m.bias.uniform_(-0.5, 0.5, generator=g)
    x = torch.randn(2, 3, 12, 12, generator=g)
    ours = copy.deepcopy(model)
    keys = ours.state_dict().keys()
    assert st.patch(ours) == 3
    assert isinstance(ours[1], st.GroupNorm)
    assert isinstance(ours[4], st.InstanceNorm2d)
    assert ours.state_dict().keys() == keys
    with torch.no_grad():
        for mode in ("train", "eval"):
            getattr(model, mode)()
            getattr(ours, mode)()
            torch.testing.assert_close(ours(x), model(x), rtol=1e-4,
                                       atol=1e-4)
        torch.testing.assert_close(ours[5].running_mean,
                                   model[5].running_mean)
        xl = x.to(memory_format=torch.channels_last)
        torch.testing.assert_close(ours(xl), model(xl), rtol=1e-4, atol=1e-4)
    m = st.InstanceNorm1d(4)
    torch.testing.assert_close(m(torch.ones(4, 5) + torch.arange(5.0)),
                               torch.nn.InstanceNorm1d(4)(
                                   torch.ones(4, 5) + torch.arange(5.0)))
    gn = st.GroupNorm(2, 4)
    assert gn.state_dict().keys() == torch.nn.GroupNorm(2, 4).state_dict(
    ).keys()


def test_registry_lists_groupnorm():
    entry = simdnorm.op("groupnorm")
    assert entry.descriptor == "group"
    assert entry.torch == "torch.nn.functional.group_norm"
    assert {op.descriptor for op in simdnorm.ops()} == {"row", "group", "batch"}
    with pytest.raises(ValueError, match="not a row operation"):
        simdnorm.normalize(np.ones((2, 4), np.float32), "groupnorm")
