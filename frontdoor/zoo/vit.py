"""A Vision Transformer training step (ViT-S/16 and ViT-B/16 shapes), bf16:
patch embedding by reshape and matmul, learned position embeddings, pre-norm
encoder layers (layer norm, multi-head attention, gelu MLP), layers scanned,
global average pool, a linear head, softmax cross-entropy and SGD.

Data parallel, FSDP-style: the batch sharded over 'data' and every weight
matrix sharded over 'data' on its largest dimension that divides (XLA
gathers each layer's weights inside the scan and reduce-scatters their
gradients); biases and norms replicated."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from frontdoor.compile import Program

# layers, width, heads, mlp, image side, patch, classes, images per device
SIZES = {
    "s": (12, 384, 6, 1536, 224, 16, 1000, 32),
    "m": (12, 768, 12, 3072, 224, 16, 1000, 16),
}


def norm(x, p):
    xf = x.astype(jnp.float32)
    mean = jnp.mean(xf, -1, keepdims=True)
    var = jnp.mean(jnp.square(xf - mean), -1, keepdims=True)
    y = (xf - mean) * jax.lax.rsqrt(var + 1e-6)
    return (y * p["scale"] + p["bias"]).astype(x.dtype)


def layer(x, p, heads):
    b, t, d = x.shape
    hd = d // heads
    h = norm(x, p["ln1"])
    q, k, v = (jnp.reshape(h @ p[w] + p[w + "_b"], (b, t, heads, hd))
               for w in ("wq", "wk", "wv"))
    s = jnp.einsum("bthd,bshd->bhts", q, k).astype(jnp.float32) / np.sqrt(hd)
    a = jnp.einsum("bhts,bshd->bthd", jax.nn.softmax(s, -1).astype(x.dtype), v)
    x = x + jnp.reshape(a, (b, t, d)) @ p["wo"] + p["wo_b"]
    h = norm(x, p["ln2"])
    h = jax.nn.gelu(h @ p["w1"] + p["w1_b"])
    return x + h @ p["w2"] + p["w2_b"]


def make_step(heads: int, patch: int):
    def loss(params, images, labels):
        b, side, _, c = images.shape
        g = side // patch
        x = jnp.reshape(images, (b, g, patch, g, patch, c))
        x = jnp.reshape(jnp.transpose(x, (0, 1, 3, 2, 4, 5)),
                        (b, g * g, patch * patch * c))
        x = x @ params["patch"] + params["patch_b"] + params["pos"]
        x, _ = jax.lax.scan(lambda x, p: (layer(x, p, heads), None), x,
                            params["layers"])
        x = jnp.mean(norm(x, params["ln"]).astype(jnp.float32), 1)
        logits = x @ params["head"].astype(jnp.float32) + params["head_b"]
        logp = jax.nn.log_softmax(logits, -1)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], -1))

    def train_step(params, images, labels):
        value, g = jax.value_and_grad(loss)(params, images, labels)
        return jax.tree.map(lambda a, b: a - 1e-3 * b, params, g), value

    return train_step


def fsdp(shape: tuple[int, ...], n: int, lead: int = 0) -> P:
    """Shards the largest dimension (past `lead` stacked ones) that n
    divides over 'data'; vectors are replicated."""
    if len(shape) - lead < 2:
        return P()
    dims = sorted(range(lead, len(shape)), key=lambda i: -shape[i])
    for i in dims:
        if shape[i] % n == 0:
            return P(*(("data" if j == i else None) for j in range(len(shape))))
    return P()


def program(size: str, topology: str, mesh: dict[str, int]) -> Program:
    n, d, heads, f, side, patch, classes, per_device = SIZES[size]
    tokens = (side // patch) ** 2

    def inputs(m: Mesh):
        k = m.shape["data"]

        def arg(shape, lead=0, dtype=jnp.bfloat16):
            return jax.ShapeDtypeStruct(
                shape, dtype, sharding=NamedSharding(m, fsdp(shape, k, lead)))

        def ln(*lead):
            return {"scale": arg(lead + (d,), len(lead)),
                    "bias": arg(lead + (d,), len(lead))}
        layers = {"ln1": ln(n), "ln2": ln(n)}
        for w, shape in (("wq", (d, d)), ("wk", (d, d)), ("wv", (d, d)),
                         ("wo", (d, d)), ("w1", (d, f)), ("w2", (f, d))):
            layers[w] = arg((n,) + shape, 1)
            layers[w + "_b"] = arg((n, shape[1]), 1)
        params = {"patch": arg((patch * patch * 3, d)), "patch_b": arg((d,)),
                  "pos": arg((tokens, d)), "layers": layers, "ln": ln(),
                  "head": arg((d, classes)), "head_b": arg((classes,))}
        batch = per_device * m.devices.size
        images = jax.ShapeDtypeStruct((batch, side, side, 3), jnp.bfloat16,
                                      sharding=NamedSharding(m, P("data")))
        labels = jax.ShapeDtypeStruct((batch,), jnp.int32,
                                      sharding=NamedSharding(m, P("data")))
        return params, images, labels

    return Program(name=f"vit_{size}", step=make_step(heads, patch),
                   inputs=inputs, topology=topology, mesh=mesh, donate=(0,),
                   recipe={"model": "ViT", "layers": n, "width": d,
                           "heads": heads, "mlp": f, "image": side,
                           "patch": patch, "classes": classes,
                           "per_device_batch": per_device, "scan_layers": True,
                           "sharding": "data parallel, FSDP (weights sharded "
                                       "over 'data' on their largest dim)"})
