#!/usr/bin/env python3
"""A decoder stack with Qwen2-0.5B's shapes, run with torch's norms and then
after simdnorm.torch.patch: time per token, the norms' share, and how far
the final hidden states moved. Nothing is downloaded: the weights are
seeded random numbers.

    python3 examples/qwen2_decoder.py [--prompt 64] [--tokens 16]

Qwen2-0.5B: hidden 896, 24 layers, 14 attention heads of 64, 2 key/value
heads, MLP intermediate 4864, RMSNorm eps 1e-6, RoPE theta 1e6, bfloat16
(the embedding and the LM head are left out: they hold no norm). The layers
are Hugging Face's Qwen2 modeling code, reduced to inference with a KV
cache; their norm class is Hugging Face's Qwen2RMSNorm, verbatim, which
patch() recognizes by name. The prompt is prefilled, then `--tokens`
tokens are decoded one at a time. Norm time is measured by timing each norm
module's forward (a wrapper around it, in both runs).
"""

import argparse
import glob
import math
import os
import sys
import time

import torch

try:
    import simdnorm.torch
except ImportError:  # the build tree's package, when not installed
    here = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(here, "..", "build", "*", "python",
                                          "simdnorm", "_core*.so")),
                   key=os.path.getmtime)
    if not found:
        sys.exit("simdnorm is not importable and no build tree has it")
    sys.path.insert(0, os.path.dirname(os.path.dirname(found[-1])))
    import simdnorm.torch

HIDDEN, LAYERS, HEADS, KV_HEADS, INTERMEDIATE = 896, 24, 14, 2, 4864
HEAD_DIM, EPS, THETA = HIDDEN // HEADS, 1e-6, 1e6


class Qwen2RMSNorm(torch.nn.Module):
    """Hugging Face's (transformers' modeling_qwen2), verbatim."""

    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance +
                                                    self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


def rotate_half(x):
    x1, x2 = x[..., :x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = torch.nn.Linear(HIDDEN, HEADS * HEAD_DIM)
        self.k_proj = torch.nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM)
        self.v_proj = torch.nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM)
        self.o_proj = torch.nn.Linear(HEADS * HEAD_DIM, HIDDEN, bias=False)

    def forward(self, x, cos, sin, cache):
        t = x.shape[0]
        q = self.q_proj(x).view(t, HEADS, HEAD_DIM).transpose(0, 1)
        k = self.k_proj(x).view(t, KV_HEADS, HEAD_DIM).transpose(0, 1)
        v = self.v_proj(x).view(t, KV_HEADS, HEAD_DIM).transpose(0, 1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if cache:
            k = torch.cat((cache[0], k), dim=1)
            v = torch.cat((cache[1], v), dim=1)
        cache[:] = [k, v]
        groups = HEADS // KV_HEADS
        k = k.repeat_interleave(groups, dim=0)
        v = v.repeat_interleave(groups, dim=0)
        scores = q @ k.transpose(1, 2) / math.sqrt(HEAD_DIM)
        past = k.shape[1] - t
        mask = torch.ones(t, k.shape[1], dtype=torch.bool).tril(past)
        scores = scores.masked_fill(~mask, float("-inf"))
        probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        return self.o_proj((probs @ v).transpose(0, 1).reshape(t, HIDDEN))


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm = Qwen2RMSNorm(HIDDEN, EPS)
        self.self_attn = Attention()
        self.post_attention_layernorm = Qwen2RMSNorm(HIDDEN, EPS)
        self.gate_proj = torch.nn.Linear(HIDDEN, INTERMEDIATE, bias=False)
        self.up_proj = torch.nn.Linear(HIDDEN, INTERMEDIATE, bias=False)
        self.down_proj = torch.nn.Linear(INTERMEDIATE, HIDDEN, bias=False)

    def forward(self, x, cos, sin, cache):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, cache)
        h = self.post_attention_layernorm(x)
        mlp = torch.nn.functional.silu(self.gate_proj(h)) * self.up_proj(h)
        return x + self.down_proj(mlp)


class Decoder(torch.nn.Module):
    def __init__(self, layers=LAYERS):
        super().__init__()
        self.layers = torch.nn.ModuleList(Layer() for _ in range(layers))
        self.norm = Qwen2RMSNorm(HIDDEN, EPS)

    def forward(self, x, position, caches):
        t = x.shape[0]
        inv = 1.0 / THETA**(torch.arange(0, HEAD_DIM, 2) / HEAD_DIM)
        freqs = torch.outer(torch.arange(position, position + t), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        for layer, cache in zip(self.layers, caches):
            x = layer(x, cos, sin, cache)
        return self.norm(x)


class Timed(torch.nn.Module):
    """Wraps a norm module and adds its forward's wall time to `total`."""
    total = 0.0

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        t0 = time.perf_counter()
        y = self.inner(x)
        Timed.total += time.perf_counter() - t0
        return y


def wrap_norms(model):
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child).__name__.endswith("RMSNorm"):
                setattr(parent, name, Timed(child))


def unwrap_norms(model):
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, Timed):
                setattr(parent, name, child.inner)


def run(model, prompt, tokens, steps):
    """Prefill, then decode steps: (prefill s, norm s, decode s per token,
    norm s per token, final hidden states of every step)."""
    caches = [[] for _ in model.layers]
    Timed.total = 0.0
    t0 = time.perf_counter()
    out = [model(prompt, 0, caches)]
    prefill, prefill_norms = time.perf_counter() - t0, Timed.total
    Timed.total = 0.0
    t0 = time.perf_counter()
    for i in range(steps):
        out.append(model(tokens[i:i + 1], prompt.shape[0] + i, caches))
    decode = (time.perf_counter() - t0) / steps
    return prefill, prefill_norms, decode, Timed.total / steps, torch.cat(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompt", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--threads", type=int, default=0,
                        help="torch.set_num_threads (0: torch's default)")
    parser.add_argument("--layers", type=int, default=LAYERS,
                        help="fewer for a quick check (the test runs 2)")
    opt = parser.parse_args()
    if opt.threads:
        torch.set_num_threads(opt.threads)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    model = Decoder(opt.layers).to(torch.bfloat16).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("layernorm.weight") or name == "norm.weight":
                p.uniform_(0.5, 1.5)  # not all ones: the weight matters
    params = sum(p.numel() for p in model.parameters())
    made = time.perf_counter() - t0
    print(f"Qwen2-0.5B-shaped decoder: {opt.layers} layers, "
          f"{params / 1e6:.0f}M parameters (bfloat16, seeded random, "
          f"{made:.1f} s to make), {torch.get_num_threads()} thread(s), torch "
          f"{torch.__version__}, simdnorm {simdnorm.__version__} "
          f"({simdnorm.active_isa()})")
    prompt = torch.randn(opt.prompt, HIDDEN).to(torch.bfloat16)
    tokens = torch.randn(opt.tokens, HIDDEN).to(torch.bfloat16)
    results = {}
    with torch.inference_mode():
        run(model, prompt[:8], tokens, 2)  # warm-up
        wrap_norms(model)
        results["torch"] = run(model, prompt, tokens, opt.tokens)
        unwrap_norms(model)
        swapped = simdnorm.torch.patch(model)
        run(model, prompt[:8], tokens, 2)
        wrap_norms(model)
        results["simdnorm"] = run(model, prompt, tokens, opt.tokens)
    print(f"simdnorm.torch.patch swapped {swapped} norm modules\n")
    print("| norms | prefill of {} tokens | norms' share | decode, per token "
          "| norms' share | norm time per decoded token |".format(opt.prompt))
    print("|---|---:|---:|---:|---:|---:|")
    for name, (prefill, pn, decode, dn, _) in results.items():
        print(f"| {name} | {prefill * 1e3:.1f} ms | {pn / prefill:.2%} | "
              f"{decode * 1e3:.2f} ms | {dn / decode:.2%} | {dn * 1e6:.0f} us "
              "|")
    a, b = results["torch"][4].float(), results["simdnorm"][4].float()
    diff = (a - b).abs()
    print(f"\nfinal hidden states ({a.shape[0]} tokens x {HIDDEN}): largest "
          f"difference {diff.max().item():.3g} (values up to "
          f"{a.abs().max().item():.3g}; mean difference "
          f"{diff.mean().item():.3g}; {(a != b).float().mean().item():.2%} "
          "of elements differ)")


if __name__ == "__main__":
    main()
