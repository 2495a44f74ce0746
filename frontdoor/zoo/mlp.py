"""A two-layer MLP training step (bf16, gelu, MSE, SGD), data parallel."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from frontdoor.compile import Program

# width, hidden, examples per device
SIZES = {"s": (1024, 4096, 128), "m": (4096, 16384, 256)}


def loss(p, x, y):
    h = jax.nn.gelu(x @ p["w1"] + p["b1"])
    return jnp.mean((h @ p["w2"] + p["b2"] - y).astype(jnp.float32) ** 2)


def train_step(p, x, y):
    value, g = jax.value_and_grad(loss)(p, x, y)
    return jax.tree.map(lambda a, b: a - 1e-3 * b, p, g), value


def program(size: str, topology: str, mesh: dict[str, int]) -> Program:
    d, h, per_device = SIZES[size]

    def inputs(m: Mesh):
        def arg(shape, spec):
            return jax.ShapeDtypeStruct(shape, jnp.bfloat16,
                                        sharding=NamedSharding(m, spec))
        batch = per_device * m.devices.size
        params = {"w1": arg((d, h), P()), "b1": arg((h,), P()),
                  "w2": arg((h, d), P()), "b2": arg((d,), P())}
        data = P(tuple(m.axis_names))
        return params, arg((batch, d), data), arg((batch, d), data)

    return Program(name=f"mlp_{size}", step=train_step, inputs=inputs,
                   topology=topology, mesh=mesh, donate=(0,),
                   recipe={"model": "mlp", "width": d, "hidden": h,
                           "per_device_batch": per_device,
                           "sharding": "data parallel"})
