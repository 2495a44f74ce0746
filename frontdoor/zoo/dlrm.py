"""A DLRM training step (Naumov et al. 2019; MLPerf's Criteo model, smaller),
f32: a bottom MLP over the dense features, one embedding lookup per
categorical feature (jnp.take on its own table), pairwise dot-product
interaction of the bottom output and the embeddings (the strictly lower
triangle), a top MLP to one logit, binary cross-entropy and SGD (the
tables' gradients dense, as autodiff gives them).

The tables row-sharded over every device (XLA gathers the indices, looks
up the local rows and sums the partial results); the dense MLPs data
parallel: the batch sharded over 'data', their weights replicated."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from frontdoor.compile import Program

# table rows (one table each), embedding dim, dense features, bottom MLP,
# top MLP, examples per device
SIZES = {
    "s": ((1 << 16,) * 4 + (1 << 12,) * 4, 64, 13, (512, 256), (512, 256),
          1024),
    "m": ((1 << 20,) * 6 + (1 << 16,) * 10 + (1 << 10,) * 10, 128, 13,
          (512, 256), (1024, 1024, 512, 256), 2048),
}


def mlp(x, layers, last_relu=True):
    for i, (w, b) in enumerate(layers):
        x = x @ w + b
        if last_relu or i < len(layers) - 1:
            x = jax.nn.relu(x)
    return x


def loss(params, dense, sparse, labels):
    """dense: [batch, features] f32; sparse: [batch, tables] int32."""
    x = mlp(dense, params["bottom"])
    emb = [jnp.take(t, sparse[:, i], axis=0)
           for i, t in enumerate(params["tables"])]
    z = jnp.stack([x] + emb, 1)
    f = z.shape[1]
    dots = jnp.einsum("bfd,bgd->bfg", z, z)
    rows, cols = np.tril_indices(f, -1)
    x = jnp.concatenate([x, dots[:, rows, cols]], -1)
    logit = mlp(x, params["top"], last_relu=False)[:, 0]
    return jnp.mean(jnp.maximum(logit, 0) - logit * labels
                    + jnp.log1p(jnp.exp(-jnp.abs(logit))))


def train_step(params, dense, sparse, labels):
    value, g = jax.value_and_grad(loss)(params, dense, sparse, labels)
    return jax.tree.map(lambda a, b: a - 1e-2 * b, params, g), value


def program(size: str, topology: str, mesh: dict[str, int]) -> Program:
    rows, d, n_dense, bottom, top, per_device = SIZES[size]
    f = len(rows) + 1
    top_in = d + f * (f - 1) // 2

    def inputs(m: Mesh):
        def arg(shape, spec, dtype=jnp.float32):
            return jax.ShapeDtypeStruct(shape, dtype,
                                        sharding=NamedSharding(m, spec))

        def layers(sizes, c_in):
            out = []
            for c in sizes:
                out.append((arg((c_in, c), P()), arg((c,), P())))
                c_in = c
            return out
        all_devices = tuple(m.axis_names)
        params = {"bottom": layers(bottom + (d,), n_dense),
                  "top": layers(top + (1,), top_in),
                  "tables": [arg((r, d), P(all_devices, None)) for r in rows]}
        batch = per_device * m.devices.size
        return (params, arg((batch, n_dense), P("data")),
                arg((batch, len(rows)), P("data"), jnp.int32),
                arg((batch,), P("data")))

    return Program(name=f"dlrm_{size}", step=train_step, inputs=inputs,
                   topology=topology, mesh=mesh, donate=(0,),
                   recipe={"model": "DLRM", "tables": len(rows),
                           "table_rows": list(rows), "embedding_dim": d,
                           "dense_features": n_dense, "bottom_mlp": list(bottom),
                           "top_mlp": list(top), "per_device_batch": per_device,
                           "sharding": "tables row-sharded over all devices, "
                                       "dense part data parallel"})
