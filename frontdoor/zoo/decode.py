"""A dense decoder's serving decode step (Llama-style: RMSNorm, attention,
SwiGLU), bf16: one new token per sequence against a KV cache of length T,
which each layer reads and updates with dynamic_update_slice; layers
scanned; the cache donated. Tensor parallel over heads (Megatron) and data
parallel over the batch, on a (data, model) mesh."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec as P

from frontdoor.compile import Program
from frontdoor.zoo.decoder import arg, rms, weights

# layers, width, heads, ffn, cache length, sequences per data shard, vocabulary
SIZES = {
    "s": (4, 1024, 8, 2816, 1024, 8, 32000),
    "m": (8, 2048, 16, 5632, 2048, 16, 32000),
}


def layer(x, p, k_cache, v_cache, pos, heads):
    """x: [batch, width], the new token; caches: [batch, T, heads, hd]."""
    b, d = x.shape
    hd = d // heads
    h = rms(x, p["g1"])
    q, k, v = (jnp.reshape(h @ p[w], (b, 1, heads, hd)) for w in ("wq", "wk", "wv"))
    k_cache = jax.lax.dynamic_update_slice(k_cache, k, (0, pos, 0, 0))
    v_cache = jax.lax.dynamic_update_slice(v_cache, v, (0, pos, 0, 0))
    s = jnp.einsum("bqhd,bthd->bhqt", q, k_cache).astype(jnp.float32) / np.sqrt(hd)
    s = jnp.where(jnp.arange(k_cache.shape[1]) <= pos, s, -1e30)
    a = jnp.einsum("bhqt,bthd->bqhd", jax.nn.softmax(s, -1).astype(x.dtype), v_cache)
    x = x + jnp.reshape(a, (b, d)) @ p["wo"]
    h = rms(x, p["g2"])
    return x + (jax.nn.silu(h @ p["w1"]) * (h @ p["w3"])) @ p["w2"], k_cache, v_cache


def make_step(heads: int):
    def decode_step(params, cache, tokens, pos):
        """tokens: [batch] int32, the last token of each sequence; pos: the
        cache slot it goes to. Returns the next tokens and the cache."""
        x = params["embed"][tokens]

        def body(x, layer_in):
            p, k_cache, v_cache = layer_in
            x, k_cache, v_cache = layer(x, p, k_cache, v_cache, pos, heads)
            return x, (k_cache, v_cache)

        x, (k, v) = jax.lax.scan(body, x, (params["layers"], cache["k"], cache["v"]))
        logits = rms(x, params["gf"]) @ params["embed"].T
        return jnp.argmax(logits, -1).astype(jnp.int32), {"k": k, "v": v}

    return decode_step


def program(size: str, topology: str, mesh: dict[str, int]) -> Program:
    n, d, heads, f, t, per_shard, vocab = SIZES[size]

    def inputs(m: Mesh):
        params = weights(m, n, d, f, vocab)
        batch = per_shard * m.shape["data"]
        kv = P(None, "data", None, "model", None)
        cache = {"k": arg(m, (n, batch, t, heads, d // heads), kv),
                 "v": arg(m, (n, batch, t, heads, d // heads), kv)}
        tokens = arg(m, (batch,), P("data"), jnp.int32)
        pos = arg(m, (), P(), jnp.int32)
        return params, cache, tokens, pos

    return Program(name=f"decode_{size}", step=make_step(heads), inputs=inputs,
                   topology=topology, mesh=mesh, donate=(1,),
                   recipe={"model": "dense decoder, decode step with KV cache",
                           "layers": n, "width": d, "heads": heads, "ffn": f,
                           "cache_length": t, "per_data_shard_batch": per_shard,
                           "vocab": vocab, "scan_layers": True,
                           "sharding": "data (batch) x tensor (heads)"})
