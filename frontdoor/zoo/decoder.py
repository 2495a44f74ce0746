"""A dense decoder transformer training step (Llama-style: RMSNorm, causal
attention, SwiGLU), bf16, layers scanned, optionally rematerialised; data
and tensor (Megatron) parallel over a (data, model) mesh."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from frontdoor.compile import Program

# layers, width, heads, ffn, sequence, examples per data shard, vocabulary
SIZES = {
    "s": (2, 1024, 8, 2816, 1024, 4, 32000),
    "m": (4, 2048, 16, 5632, 2048, 2, 32000),
}


def rms(x, g):
    v = jnp.mean(x.astype(jnp.float32) ** 2, -1, keepdims=True)
    return (x * jax.lax.rsqrt(v + 1e-6).astype(x.dtype)) * g


def layer(x, p, heads):
    b, t, d = x.shape
    hd = d // heads
    h = rms(x, p["g1"])
    q, k, v = (jnp.reshape(h @ p[w], (b, t, heads, hd)) for w in ("wq", "wk", "wv"))
    s = jnp.einsum("bthd,bshd->bhts", q, k).astype(jnp.float32) / np.sqrt(hd)
    s = jnp.where(jnp.tril(jnp.ones((t, t), bool)), s, -1e30)
    a = jnp.einsum("bhts,bshd->bthd", jax.nn.softmax(s, -1).astype(x.dtype), v)
    x = x + jnp.reshape(a, (b, t, d)) @ p["wo"]
    h = rms(x, p["g2"])
    return x + (jax.nn.silu(h @ p["w1"]) * (h @ p["w3"])) @ p["w2"]


def make_step(heads: int, remat: bool):
    body = lambda x, p: (layer(x, p, heads), None)  # noqa: E731
    if remat:
        body = jax.checkpoint(body)

    def loss(params, tokens):
        x = params["embed"][tokens[:, :-1]]
        x, _ = jax.lax.scan(body, x, params["layers"])
        logits = rms(x, params["gf"]) @ params["embed"].T
        logp = jax.nn.log_softmax(logits.astype(jnp.float32), -1)
        return -jnp.mean(jnp.take_along_axis(logp, tokens[:, 1:, None], -1))

    def train_step(params, tokens):
        value, g = jax.value_and_grad(loss)(params, tokens)
        return jax.tree.map(lambda a, b: a - 1e-4 * b, params, g), value

    return train_step


def arg(m: Mesh, shape, spec, dtype=jnp.bfloat16) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(m, spec))


def weights(m: Mesh, n: int, d: int, f: int, vocab: int) -> dict:
    """The model's parameters, layers stacked for the scan: attention and
    FFN weights split over 'model' (Megatron: columns in, rows out), the
    embedding's rows over 'model'."""
    col, row = P(None, None, "model"), P(None, "model", None)
    layers = {"g1": arg(m, (n, d), P()), "g2": arg(m, (n, d), P()),
              "wq": arg(m, (n, d, d), col), "wk": arg(m, (n, d, d), col),
              "wv": arg(m, (n, d, d), col), "wo": arg(m, (n, d, d), row),
              "w1": arg(m, (n, d, f), col), "w3": arg(m, (n, d, f), col),
              "w2": arg(m, (n, f, d), row)}
    return {"embed": arg(m, (vocab, d), P("model", None)),
            "gf": arg(m, (d,), P()), "layers": layers}


def program(size: str, topology: str, mesh: dict[str, int],
            remat: bool = True) -> Program:
    n, d, heads, f, t, per_shard, vocab = SIZES[size]

    def inputs(m: Mesh):
        params = weights(m, n, d, f, vocab)
        tokens = arg(m, (per_shard * m.shape["data"], t + 1), P("data", None),
                     jnp.int32)
        return params, tokens

    return Program(name=f"decoder_{size}{'' if remat else '_noremat'}",
                   step=make_step(heads, remat), inputs=inputs,
                   topology=topology, mesh=mesh, donate=(0,),
                   recipe={"model": "dense decoder", "layers": n, "width": d,
                           "heads": heads, "ffn": f, "sequence": t,
                           "per_data_shard_batch": per_shard, "vocab": vocab,
                           "remat": remat, "scan_layers": True,
                           "sharding": "data x tensor (Megatron)"})
