"""simdnorm.torch against torch's own ops, Hugging Face's RMSNorm written in
torch, vLLM's semantics, and the float64 reference (the contract's bounds:
torch's own bfloat16 results are not correctly rounded, so they are compared
with a tolerance, and simdnorm's with float64)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import simdnorm  # noqa: E402
import simdnorm.torch as st  # noqa: E402
from bounds import assert_correctly_rounded, assert_f32_bound, ulp  # noqa

torch.manual_seed(17)
DTYPES = [torch.float32, torch.bfloat16, torch.float16]
NAMES = {torch.float32: "float32", torch.bfloat16: "bfloat16",
         torch.float16: "float16"}


def _f32(t):
    """A tensor's values as a float32 NumPy array (exact)."""
    return None if t is None else t.detach().float().numpy()


def _exact(kind, x, weight=None, bias=None, eps=1e-5, **options):
    """float64 truth and xhat of a call on torch tensors."""
    x_dtype = "bfloat16" if x.dtype == torch.bfloat16 else None
    xs = _f32(x) if x.dtype != torch.float16 else x.numpy()
    return simdnorm.reference.normalize(
        xs.reshape(-1, xs.shape[-1]) if xs.ndim else xs, kind, _f32(weight),
        _f32(bias), eps, return_xhat=True, x_dtype=x_dtype, **options)


def _check(y, kind, x, weight=None, bias=None, eps=1e-5, **options):
    exact, xhat = _exact(kind, x, weight, bias, eps, **options)
    values = y.detach().double().numpy().reshape(exact.shape)
    if y.dtype == torch.float32:
        scale = _f32(weight)  # the bound's |gamma| is the scale's
        if scale is not None:
            scale = scale + np.float32(options.get("gamma_offset", 0.0))
        assert_f32_bound(values, exact, xhat, scale, _f32(bias), kind)
    else:
        assert_correctly_rounded(values, exact, NAMES[y.dtype])
    return exact, xhat


def _params(n, dtype, bias=True):
    w = (torch.rand(n) + 0.5).to(dtype)
    return (w, (torch.rand(n) - 0.5).to(dtype)) if bias else (w, None)


def hf_rms_norm(x, weight, eps):
    """Hugging Face's LlamaRMSNorm.forward, verbatim."""
    input_dtype = x.dtype
    h = x.to(torch.float32)
    variance = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(variance + eps)
    return weight * h.to(input_dtype)


class LlamaRMSNorm(torch.nn.Module):
    """Hugging Face's class, as models define it."""

    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        return hf_rms_norm(hidden_states, self.weight, self.variance_epsilon)


class GemmaRMSNorm(torch.nn.Module):
    """Gemma's: (1 + weight) in float32, one rounding."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.float()
        out = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return (out * (1.0 + self.weight.float())).type_as(x)


# Functional forms.

@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
@pytest.mark.parametrize("shape", [(1, 896), (3, 5, 64), (2, 7)])
def test_layer_norm_against_aten(dtype, shape):
    x = torch.randn(shape).to(dtype)
    w, b = _params(shape[-1], dtype)
    y = st.layer_norm(x, shape[-1:], w, b, 1e-5)
    assert y.dtype == dtype and y.shape == x.shape and y.is_contiguous()
    exact, xhat = _check(y, "layernorm", x, w, b, 1e-5)
    if dtype == torch.float16:
        return  # torch 1.13 has no float16 layer_norm on CPU
    ref = F.layer_norm(x, shape[-1:], w, b, 1e-5)
    # ATen within a few of its dtype's steps of the output's scale (its
    # bfloat16 path rounds statistics: up to ~3.3 bf16 steps measured).
    scale = (np.abs(_f32(w)) * np.maximum(1, np.abs(xhat)) + np.abs(_f32(b)))
    step = 2.0**-23 if dtype == torch.float32 else 2.0**-8
    diff = np.abs(_f32(y).reshape(exact.shape) - _f32(ref).reshape(
        exact.shape))
    assert (diff <= 8 * step * scale).all()


def test_layer_norm_normalized_shape_of_two_dims_and_no_params():
    x = torch.randn(4, 6, 32)
    y = st.layer_norm(x, (6, 32))
    _check(y.reshape(4, 192), "layernorm", x.reshape(4, 192))
    torch.testing.assert_close(y, F.layer_norm(x, (6, 32)), rtol=0,
                               atol=1e-5)
    w, b = torch.rand(6, 32), torch.rand(6, 32)
    torch.testing.assert_close(st.layer_norm(x, [6, 32], w, b),
                               F.layer_norm(x, [6, 32], w, b), rtol=0,
                               atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
def test_rms_norm_is_hugging_faces(dtype):
    x = torch.randn(16, 896).to(dtype)
    w, _ = _params(896, dtype, bias=False)
    y = st.rms_norm(x, (896,), w, 1e-6)
    assert y.dtype == dtype
    _check(y, "rmsnorm", x, w, None, 1e-6, round_normalized=True)
    hf = hf_rms_norm(x, w, 1e-6)
    if dtype == torch.float32:
        torch.testing.assert_close(y, hf, rtol=0, atol=4e-6)
    else:
        # Same rounding order: they differ only where HF's float32
        # statistics move x / rms across a rounding boundary.
        differ = (y != hf).double().mean().item()
        assert differ < 0.01
        torch.testing.assert_close(y.float(), hf.float(), rtol=2**-7, atol=0)


def test_fast_rounding_is_within_its_bound():
    x = torch.randn(32, 896, dtype=torch.bfloat16)
    w, b = _params(896, torch.bfloat16)
    for f, kind, args, options in (
            (st.layer_norm, "layernorm", (w, b), {}),
            (st.rms_norm, "rmsnorm", (w,), {"round_normalized": True})):
        fast = f(x, (896,), *args, eps=1e-5, fast_rounding=True)
        exact, xhat = _exact(kind, x, *args, eps=1e-5, **options)
        # The fp32 result (within the f32 bound, scaled by the row's terms)
        # rounded once: within an ulp where the terms do not cancel, but a
        # y near 0 after cancellation can be many of its own ulps off.
        g, bias = _f32(args[0]).astype(np.float64), 0.0
        if len(args) > 1:
            bias = np.abs(_f32(args[1]).astype(np.float64))
        f32_err = simdnorm.op(kind).f32_bound * 2.0**-23 * (
            np.abs(g) * np.maximum(1.0, np.abs(xhat)) + bias)
        err = np.abs(_f32(fast).astype(np.float64) - exact)
        assert (err <= ulp(exact, "bfloat16") + f32_err).all()
        same = (fast == f(x, (896,), *args, eps=1e-5)).double().mean()
        assert same.item() > 0.99


@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
def test_normalize_is_f_normalize(dtype):
    x = torch.randn(5, 3, 64).to(dtype)
    y = st.normalize(x, dim=-1)
    assert y.dtype == dtype
    _check(y, "l2norm", x, eps=1e-12)
    if dtype == torch.float32:
        torch.testing.assert_close(y, F.normalize(x, dim=-1), rtol=0,
                                   atol=1e-6)
    out = torch.empty_like(x)
    assert st.normalize(x, dim=2, out=out) is out and torch.equal(out, y)
    with pytest.raises(ValueError, match=r"p=2 only \(p=1\)"):
        st.normalize(x, p=1)


def test_rms_norm_default_eps_is_finfo_eps():
    x = torch.randn(4, 64, dtype=torch.bfloat16) * 1e-3
    y = st.rms_norm(x, 64)
    _check(y, "rmsnorm", x, eps=torch.finfo(torch.bfloat16).eps,
           round_normalized=True)


def test_float32_weights_with_16_bit_input():
    x = torch.randn(8, 96, dtype=torch.bfloat16)
    w, b = _params(96, torch.float32)
    y = st.layer_norm(x, (96,), w, b)
    assert y.dtype == torch.bfloat16
    _check(y, "layernorm", x, w, b)
    y = st.layer_norm(x, (96,), w.bfloat16(), b)  # mixed: both as float32
    _check(y, "layernorm", x, w.bfloat16(), b)


def test_strided_tensors_are_not_copied_and_agree():
    wide = torch.randn(6, 1024, dtype=torch.bfloat16)
    x = wide[:, 64:960]  # rows 1024 apart
    w, b = _params(896, torch.bfloat16)
    dense = st.layer_norm(x.contiguous(), (896,), w, b)
    copies = []
    original = torch.Tensor.contiguous

    def spy(self, *args, **kwargs):
        copies.append(self.shape)
        return original(self, *args, **kwargs)

    torch.Tensor.contiguous = spy
    try:
        y = st.layer_norm(x, (896,), w, b)
        # Per-head views of a fused QKV buffer: leading dims that do not
        # merge, one call per token, still no copy.
        qkv = torch.randn(5, 3 * 4 * 64)
        q = qkv[:, :256].view(5, 4, 64)
        y_heads = st.rms_norm(q, (64,), None, 1e-6)
    finally:
        torch.Tensor.contiguous = original
    assert copies == []
    assert torch.equal(y, dense)
    assert torch.equal(y_heads, st.rms_norm(q.contiguous(), (64,), None,
                                            1e-6))


def test_empty_and_one_dimensional_inputs():
    assert st.layer_norm(torch.empty(0, 64), 64).shape == (0, 64)
    assert st.rms_norm(torch.empty(3, 0, 8), [8]).shape == (3, 0, 8)
    x = torch.randn(64)
    assert torch.equal(st.layer_norm(x, 64), st.layer_norm(x[None], 64)[0])


def test_any_other_layout_is_handled():
    base = torch.randn(64, 6)
    for x in (base.t(),  # last dimension not contiguous
              torch.randn(1, 64).expand(4, 64),  # rows 0 apart
              torch.randn(3, 4, 64).transpose(0, 1)):  # leading dims
        y = st.layer_norm(x, (64,))
        assert torch.equal(y, st.layer_norm(x.contiguous(), (64,)))


# Custom ops (vLLM's schemas and semantics).

def test_op_schemas_are_vllms():
    assert str(torch.ops.simdnorm.rms_norm.default._schema) == (
        "simdnorm::rms_norm(Tensor(a!) out, Tensor input, Tensor weight, "
        "float epsilon) -> ()")
    assert str(torch.ops.simdnorm.fused_add_rms_norm.default._schema) == (
        "simdnorm::fused_add_rms_norm(Tensor(a!) input, Tensor(b!) residual,"
        " Tensor weight, float epsilon) -> ()")


@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
def test_rms_norm_op_writes_out(dtype):
    x = torch.randn(7, 896).to(dtype)
    w, _ = _params(896, dtype, bias=False)
    out = torch.empty_like(x)
    assert torch.ops.simdnorm.rms_norm(out, x, w, 1e-6) is None
    assert torch.equal(out, st.rms_norm(x, (896,), w, 1e-6))
    # Out strided, and in place.
    wide = torch.zeros(7, 1000, dtype=dtype)
    torch.ops.simdnorm.rms_norm(wide[:, :896], x, w, 1e-6)
    assert torch.equal(wide[:, :896], out) and not wide[:, 896:].any()
    torch.ops.simdnorm.rms_norm(x, x, w, 1e-6)
    assert torch.equal(x, out)


@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
def test_fused_add_rms_norm_op_is_vllms(dtype):
    x = torch.randn(9, 896).to(dtype)
    residual = torch.randn(9, 896).to(dtype)
    w, _ = _params(896, dtype, bias=False)
    x0, r0 = x.clone(), residual.clone()
    torch.ops.simdnorm.fused_add_rms_norm(x, residual, w, 1e-6)
    # vLLM: residual = input + residual (one rounding: torch's own add),
    # then input = rms_norm(residual) * weight, HF's order.
    assert torch.equal(residual, x0 + r0)
    _check(x, "rmsnorm", residual, w, None, 1e-6, round_normalized=True)
    assert torch.equal(x, st.rms_norm(residual, (896,), w, 1e-6))


def test_fused_add_rms_norm_op_on_strided_input():
    # vLLM's input may be a slice of a wider buffer; residual contiguous.
    wide = torch.randn(4, 1024, dtype=torch.bfloat16)
    x = wide[:, :896]
    residual = torch.randn(4, 896, dtype=torch.bfloat16)
    expected_r = x + residual
    w, _ = _params(896, torch.bfloat16, bias=False)
    tail = wide[:, 896:].clone()
    torch.ops.simdnorm.fused_add_rms_norm(x, residual, w, 1e-6)
    assert torch.equal(residual, expected_r)
    assert torch.equal(x, st.rms_norm(expected_r, (896,), w, 1e-6))
    assert torch.equal(wide[:, 896:], tail)
    # And a residual that needs a copy (transposed): written back.
    x = torch.randn(4, 64)
    r = torch.randn(64, 4).t()
    expected_r = x + r
    torch.ops.simdnorm.fused_add_rms_norm(x, r, torch.ones(64), 1e-6)
    assert torch.equal(r, expected_r)


def test_layer_norm_op():
    x = torch.randn(3, 4, 64)
    w, b = _params(64, torch.float32)
    out = torch.empty_like(x)
    torch.ops.simdnorm.layer_norm(out, x, w, b, 1e-5)
    assert torch.equal(out, st.layer_norm(x, (64,), w, b, 1e-5))
    torch.ops.simdnorm.layer_norm(out, x, None, None, 1e-5)
    assert torch.equal(out, st.layer_norm(x, (64,)))


# Modules and patch.

def test_layer_norm_module_is_torchs():
    ref = torch.nn.LayerNorm(96, eps=1e-5)
    with torch.no_grad():
        ref.weight.uniform_(0.5, 1.5)
        ref.bias.uniform_(-0.5, 0.5)
    mine = st.LayerNorm(96, eps=1e-5)
    assert isinstance(mine, torch.nn.LayerNorm)
    assert mine.state_dict().keys() == ref.state_dict().keys()
    mine.load_state_dict(ref.state_dict())
    x = torch.randn(5, 96)
    with torch.no_grad():
        torch.testing.assert_close(mine(x), ref(x), rtol=0, atol=1e-5)
    with torch.inference_mode():
        mine(x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16],
                         ids=NAMES.get)
def test_rms_norm_module_loads_hugging_faces(dtype):
    hf = LlamaRMSNorm(96, eps=1e-5).to(dtype)
    with torch.no_grad():
        hf.weight.uniform_(0.5, 1.5)
    mine = st.RMSNorm(96, eps=1e-5).to(dtype)
    mine.load_state_dict(hf.state_dict())
    assert mine.variance_epsilon == mine.eps == 1e-5
    x = torch.randn(6, 96).to(dtype)
    with torch.no_grad():
        y, expected = mine(x), hf(x)
        assert y.dtype == expected.dtype == dtype
        if dtype == torch.float32:
            torch.testing.assert_close(y, expected, rtol=0, atol=1e-5)
        else:  # the same rounding order: equal but for HF's fp32 statistics
            assert (y != expected).double().mean().item() < 0.02
        # A float32 weight with bfloat16 input: promoted, as in HF.
        hf32 = LlamaRMSNorm(96, eps=1e-5)
        mine32 = st.RMSNorm(96, eps=1e-5)
        xb = x.bfloat16()
        assert mine32(xb).dtype == hf32(xb).dtype == torch.float32
        torch.testing.assert_close(mine32(xb), hf32(xb), rtol=2**-7, atol=0)


def _model(dtype):
    torch.manual_seed(3)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.input_layernorm = LlamaRMSNorm(64, 1e-6)
            self.proj = torch.nn.Linear(64, 64)
            self.post = torch.nn.LayerNorm(64)
            self.gemma_norm = GemmaRMSNorm(64)

        def forward(self, x):
            x = x + self.proj(self.input_layernorm(x))
            return self.gemma_norm(self.post(x))

    model = torch.nn.Sequential(Block(), Block()).to(dtype)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.rand_like(p) * 0.1)
    return model


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16],
                         ids=NAMES.get)
def test_patch_keeps_outputs(dtype):
    model = _model(dtype)
    x = torch.randn(5, 64).to(dtype)
    # Each norm's input in the unpatched run, to check the new module on it.
    inputs = {}
    norms = {n: m for n, m in model.named_modules()
             if type(m).__name__.endswith(("RMSNorm", "LayerNorm"))}

    def keep(name):
        def hook(module, args, out):  # returns None: the output stays
            inputs[name] = args[0]
        return hook

    for name, m in norms.items():
        m.register_forward_hook(keep(name))
    with torch.no_grad():
        expected = model(x)
    weights = {n: p for n, p in model.named_parameters()}
    assert st.patch(model) == 6
    assert st.patch(model) == 0  # idempotent
    assert not model[0].post.fast_rounding
    assert st.patch(_model(dtype), fast_rounding=True) == 6
    assert isinstance(model[0].input_layernorm, st.RMSNorm)
    assert isinstance(model[0].post, st.LayerNorm)
    assert model[1].gemma_norm.weight_offset == 1.0
    assert {n: p for n, p in model.named_parameters()} == weights
    # Every swapped module, on its old input: within the contract's bounds
    # of the float64 truth of the old module's math.
    for name, old in norms.items():
        new = model.get_submodule(name)
        with torch.no_grad():
            y = new(inputs[name])
        if isinstance(old, torch.nn.LayerNorm):
            _check(y, "layernorm", inputs[name], old.weight, old.bias,
                   old.eps)
        elif isinstance(old, GemmaRMSNorm):
            _check(y, "rmsnorm", inputs[name], old.weight, None, old.eps,
                   gamma_offset=1.0)
        else:
            _check(y, "rmsnorm", inputs[name], old.weight, None,
                   old.variance_epsilon, round_normalized=True)
    # And the whole model: the same outputs but for those roundings.
    with torch.no_grad():
        y = model(x)
    tol = 1e-5 if dtype == torch.float32 else 0.05
    torch.testing.assert_close(y, expected, rtol=0, atol=tol)


def test_patch_leaves_other_modules():
    class MyLayerNorm(torch.nn.LayerNorm):
        def forward(self, x):
            return super().forward(x) * 2

    class NotANorm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(4))

    model = torch.nn.Sequential(MyLayerNorm(4), NotANorm(), torch.nn.ReLU())
    assert st.patch(model) == 0


# Autograd, threads, bad inputs.

def test_inplace_ops_refuse_autograd_clearly():
    x = torch.randn(2, 8, requires_grad=True)
    w = torch.nn.Parameter(torch.ones(8))
    with pytest.raises(RuntimeError, match="input requires grad.*no_grad"):
        torch.ops.simdnorm.rms_norm(torch.empty(2, 8), x, w, 1e-6)
    with pytest.raises(RuntimeError, match="weight requires grad"):
        torch.ops.simdnorm.rms_norm(torch.empty(2, 8), x.detach(), w, 1e-6)
    with torch.no_grad():
        torch.ops.simdnorm.rms_norm(torch.empty(2, 8), x, w, 1e-6)
    with torch.inference_mode():
        st.rms_norm(torch.randn(2, 8), (8,), w)


def _hf_rms(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


_GRAD_FORMS = {
    "layer_norm": (lambda x, w, b: st.layer_norm(x, (x.shape[-1],), w, b,
                                                 1e-5),
                   lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b,
                                                1e-5)),
    "rms_norm": (lambda x, w, b: st.rms_norm(x, (x.shape[-1],), w, 1e-6),
                 lambda x, w, b: _hf_rms(x, w, 1e-6)),
    "normalize": (lambda x, w, b: st.normalize(x, dim=-1),
                  lambda x, w, b: F.normalize(x, dim=-1)),
}


@pytest.mark.parametrize("form", sorted(_GRAD_FORMS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16,
                                   torch.float16])
def test_autograd_matches_float64(form, dtype):
    # dx, dweight and dbias of simdnorm's backward kernels against torch's
    # autograd in float64 on the same inputs: within the fp32 bound
    # (docs/accuracy.md, "Backward") plus one rounding to a 16-bit dtype,
    # relative to the largest gradient.
    ours, theirs = _GRAD_FORMS[form]
    g = torch.Generator().manual_seed(3)
    x = (torch.randn(2, 3, 80, generator=g) * 2 + 5).to(dtype)
    x = x[:, :, :72]  # rows strided, as torch slices them
    w = torch.randn(72, generator=g).to(dtype)
    b = torch.randn(72, generator=g).to(dtype)
    dy = torch.randn(2, 3, 72, generator=g).to(dtype)
    leaves = [t.clone().requires_grad_() for t in (x, w, b)]
    ours(*leaves).backward(dy)
    exact = [t.detach().double().requires_grad_() for t in (x, w, b)]
    theirs(*exact).backward(dy.double())
    tol = 128 * 2.0**-23 if dtype == torch.float32 else 2.0**-6
    for got, want in zip(leaves, exact):
        if want.grad is None:  # normalize has no weight
            assert got.grad is None
            continue
        assert got.grad.dtype == dtype and got.grad.shape == want.grad.shape
        err = (got.grad.double() - want.grad).abs().max()
        assert err <= tol * want.grad.abs().max(), (form, dtype, float(err))


@pytest.mark.parametrize("form", ["layer_norm", "rms_norm"])
@pytest.mark.parametrize("mean", [0.0, 1e4])
@pytest.mark.parametrize("dims", [1, 2])
def test_autograd_reuses_saved_statistics(form, mean, dims, monkeypatch):
    # A contiguous input's forward saves each row's mean and rstd, and the
    # backward passes them to simdnorm_backward (no statistics pass). On
    # rows 1e4 + N(0, 1) / 100 the fp32 mean is 5 % of a deviation off; the
    # backward removes that (docs/accuracy.md, "Saved statistics"), so the
    # gradients stay within the fp32 bound of float64 autograd's. One
    # normalized dimension takes _torch_core's C++ Function where it is
    # built, two take the Python one.
    calls = []
    original = simdnorm._core.backward

    def spy(*args):
        calls.append(args[-2:])
        return original(*args)

    monkeypatch.setattr(simdnorm._core, "backward", spy)
    cpp = dims == 1 and st._common_call is not simdnorm._core.torch_normalize
    before = st._torch_core.backward_calls() if cpp else None
    shape = (96,) if dims == 1 else (2, 48)
    ours = {"layer_norm": lambda x, w, b: st.layer_norm(x, shape, w, b, 1e-5),
            "rms_norm": lambda x, w, b: st.rms_norm(x, shape, w, 1e-6)}[form]
    theirs = _GRAD_FORMS[form][1]
    g = torch.Generator().manual_seed(5)
    x = mean + torch.randn(6, 96, generator=g) / (100 if mean else 1)
    w = torch.randn(96, generator=g)
    b = torch.randn(96, generator=g)
    dy = torch.randn(6, 96, generator=g)
    leaves = [t.reshape(s).clone().requires_grad_()
              for t, s in ((x, (6,) + shape), (w, shape), (b, shape))]
    ours(*leaves).backward(dy.view(leaves[0].shape))
    if cpp:
        after = st._torch_core.backward_calls()
        assert (after[0] - before[0], after[1] - before[1]) == (1, 1)
        assert not calls
    else:
        assert len(calls) == 1 and all(calls[0]), calls
    exact = [t.detach().double().requires_grad_() for t in (x, w, b)]
    theirs(*exact).backward(dy.double())
    for got, want in zip(leaves, exact):
        if want.grad is None:
            assert got.grad is None
            continue
        err = (got.grad.double().view(want.shape) - want.grad).abs().max()
        assert err <= 128 * 2.0**-23 * want.grad.abs().max(), (form, err)


def test_modules_train():
    # The modules' parameters get gradients, as torch's modules' do.
    for module, ref in ((st.LayerNorm(16), torch.nn.LayerNorm(16)),
                        (st.RMSNorm(16, eps=1e-6), None)):
        x = torch.randn(4, 16, requires_grad=True)
        module(x).square().sum().backward()
        assert x.grad is not None and module.weight.grad is not None
        if ref is not None:
            x2 = x.detach().clone().requires_grad_()
            ref(x2).square().sum().backward()
            assert torch.allclose(x.grad, x2.grad, atol=1e-4)
            assert torch.allclose(module.weight.grad, ref.weight.grad,
                                  atol=1e-4)
            assert torch.allclose(module.bias.grad, ref.bias.grad, atol=1e-4)


def test_threads_follow_torch(monkeypatch):
    # The common call (C++ reads torch.get_num_threads()) and the Python
    # path (strided input, ops) both pass torch's thread count.
    seen = []
    original = simdnorm._core.normalize

    def spy(*args):
        seen.append(args[13])
        return original(*args)

    monkeypatch.setattr(simdnorm._core, "normalize", spy)
    threads = torch.get_num_threads()
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            x = torch.randn(64, 32)
            st.layer_norm(x, (32,))
            assert st._last_threads() == n
            st.layer_norm(x.t().contiguous().t(), (32,))
            torch.ops.simdnorm.rms_norm(torch.empty_like(x), x,
                                        torch.ones(32), 1e-6)
            assert seen == [n] * 2
            seen.clear()
    finally:
        torch.set_num_threads(threads)


def _bad(call, exception, match, *outputs):
    before = [o.clone() for o in outputs]
    with pytest.raises(exception, match=match):
        call()
    for o, b in zip(outputs, before):
        assert torch.equal(o, b)


def test_bad_inputs_raise_and_write_nothing():
    x = torch.randn(4, 64)
    w = torch.ones(64)
    out = torch.full((4, 64), 7.0)
    r = torch.randn(4, 64)
    rms = torch.ops.simdnorm.rms_norm
    fused = torch.ops.simdnorm.fused_add_rms_norm
    _bad(lambda: st.layer_norm(x.long(), (64,)), TypeError,
         "int64.*SIMDNORM_INVALID_ARGUMENT")
    _bad(lambda: st.layer_norm(x.double(), (64,)), TypeError, "float64")
    _bad(lambda: st.layer_norm(torch.tensor(1.0), ()), ValueError,
         "SIMDNORM_INVALID_SHAPE")
    _bad(lambda: st.rms_norm(torch.tensor(1.0), (1,)), ValueError,
         "normalized_shape")
    _bad(lambda: st.layer_norm(x, (32,)), ValueError,
         "does not end in normalized_shape")
    _bad(lambda: st.layer_norm(x, (64,), w[:63]), ValueError,
         "weight has shape")
    _bad(lambda: st.layer_norm(x, (64,), w.reshape(1, 64)), ValueError,
         "weight has shape")
    _bad(lambda: st.layer_norm(x, 64, w, eps="1e-5"), TypeError, "")
    _bad(lambda: st.layer_norm(x, (64,), w, w.int()), TypeError,
         "bias has dtype torch.int32")
    _bad(lambda: st.layer_norm(x, (64,), eps=-1.0), ValueError,
         "SIMDNORM_INVALID_ARGUMENT")
    _bad(lambda: st.layer_norm(x.numpy(), (64,)), TypeError, "torch.Tensor")
    _bad(lambda: rms(out, x.int(), w, 1e-6), TypeError, "int32", out)
    _bad(lambda: rms(out, x, w[:32], 1e-6), ValueError, "weight", out)
    _bad(lambda: rms(out[:, :32], x, w, 1e-6), ValueError, "out has shape",
         out)
    _bad(lambda: rms(out, x, w, -1.0), ValueError,
         "SIMDNORM_INVALID_ARGUMENT", out)
    _bad(lambda: rms(out.long(), x, w, 1e-6), TypeError, "int64")
    _bad(lambda: rms(torch.tensor(1.0), torch.tensor(1.0), w, 1e-6),
         ValueError, "0-d")
    # An out that overlaps the input without being it.
    buf = torch.randn(5, 64)
    _bad(lambda: rms(buf[1:], buf[:4], w, 1e-6), ValueError,
         "SIMDNORM_OVERLAP", buf)
    # fused_add: both in-place tensors untouched on error.
    _bad(lambda: fused(x, r, w[:63], 1e-6), ValueError, "weight", x, r)
    _bad(lambda: fused(x, r.bfloat16(), w, 1e-6), TypeError,
         "residual has dtype", x, r)
    _bad(lambda: fused(x, r[:2], w, 1e-6), ValueError, "residual has shape",
         x, r)
    _bad(lambda: fused(x, r, w, float("inf")), ValueError,
         "SIMDNORM_INVALID_ARGUMENT", x, r)
    _bad(lambda: fused(x, x, w, 1e-6), ValueError, "SIMDNORM_OVERLAP", x)


@pytest.mark.skipif(not hasattr(st, "_torch_core"),
                    reason="built without torch's C++ headers")
def test_common_calls_agree():
    # The ATen common call (_torch_core) and the Python-getter one (_core)
    # take the same calls, give the same bits, and decline the same calls
    # (None: the Python path decides).
    calls = (st._torch_core.normalize, simdnorm._core.torch_normalize)
    g = torch.Generator().manual_seed(7)
    x = torch.randn(3, 5, 64, generator=g)
    w, b = torch.randn(64, generator=g), torch.randn(64, generator=g)
    cases = [
        (0, x, (64,), w, b), (1, x, [64], w, None), (2, x, 64, None, None),
        (1, x.bfloat16(), (64,), w.bfloat16(), None),
        (0, x.half(), (64,), w.half(), b.half()),
        (0, x.bfloat16(), (64,), w, b),
        (0, x[:, :, :32], (32,), None, None),  # not contiguous
        (0, x, (5, 64), w, b), (0, x, (63,), w, b),
        (0, x.double(), (64,), None, None),
        (0, x, (64,), w, b.half()), (0, x, (64,), w[None], b),
        (0, x, (64,), w.clone().requires_grad_(True), b),
        (1, x, (64,), w.clone().requires_grad_(True), None),
        (7, x, (64,), None, None),
    ]
    for kind, t, shape, wt, bt in cases:
        got = [f(kind, t, shape, wt, bt, 1e-5, 0.0, 0) for f in calls]
        if wt is not None and wt.requires_grad:
            # Under autograd: _torch_core's C++ Function, the Python
            # Function from _core's (None), the same y.
            assert got[1] is None and got[0].grad_fn is not None, kind
            with torch.no_grad():
                got[1] = calls[1](kind, t, shape, wt, bt, 1e-5, 0.0, 0)
        if isinstance(got[0], torch.Tensor):
            bits = torch.int32 if got[0].dtype == torch.float32 else \
                torch.int16
            assert got[0].dtype == got[1].dtype
            assert torch.equal(got[0].view(bits), got[1].view(bits))
        else:
            assert got[0] == got[1], (kind, shape, got)
