"""A mixture-of-experts FFN training step (GShard/Switch style), bf16: a
pre-norm residual stack of MoE layers, each with a softmax router, top-2
routing with a capacity factor (tokens over capacity are dropped), einsum
dispatch and combine over [group, token, expert, slot] masks, gelu experts
and the load-balancing auxiliary loss; layers scanned, MSE loss, SGD.

Expert parallel on a (data, expert) mesh: each sequence is a routing group,
the groups sharded over both axes; the experts' weights sharded over
'expert' (replicated over 'data'); the tokens dispatched where their group
lies, then constrained to [expert over 'expert', group over 'data'] (an
all-to-all over 'expert'), and back for the combine."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.sharding import AbstractMesh, NamedSharding, Mesh, PartitionSpec as P

from frontdoor.compile import Program

# layers, width, expert hidden, experts, tokens per sequence (group),
# sequences per device, capacity factor
SIZES = {
    "s": (2, 1024, 2048, 8, 512, 8, 1.25),
    "m": (4, 2048, 4096, 16, 1024, 4, 1.25),
}


def top2_masks(gates, capacity: int):
    """gates: [G, S, E] f32 router probabilities. Returns the combine
    weights [G, S, E, C] and the auxiliary load-balancing loss."""
    e = gates.shape[-1]
    idx1 = jnp.argmax(gates, -1)
    mask1 = jax.nn.one_hot(idx1, e, dtype=jnp.int32)
    idx2 = jnp.argmax(jnp.where(mask1 > 0, -jnp.inf, gates), -1)
    mask2 = jax.nn.one_hot(idx2, e, dtype=jnp.int32)
    # Switch's auxiliary loss: fraction routed times mean router probability.
    aux = jnp.mean(jnp.mean(mask1.astype(jnp.float32), 1)
                   * jnp.mean(gates, 1)) * e * e
    # Each token's slot in its expert's buffer, first choices before second.
    pos1 = jnp.cumsum(mask1, 1) - 1
    pos2 = jnp.cumsum(mask2, 1) - 1 + jnp.sum(mask1, 1, keepdims=True)
    mask1 = mask1 * (pos1 < capacity)
    mask2 = mask2 * (pos2 < capacity)
    gate1 = jnp.sum(gates * mask1, -1)
    gate2 = jnp.sum(gates * mask2, -1)
    denom = jnp.maximum(gate1 + gate2, 1e-9)
    gate1, gate2 = gate1 / denom, gate2 / denom
    slot1 = jax.nn.one_hot(jnp.sum(pos1 * mask1, -1), capacity)
    slot2 = jax.nn.one_hot(jnp.sum(pos2 * mask2, -1), capacity)
    combine = (gate1[..., None, None] * mask1[..., None] * slot1[..., None, :]
               + gate2[..., None, None] * mask2[..., None] * slot2[..., None, :])
    return combine, aux


def make_step(capacity: int, mesh: AbstractMesh):
    def constrain(x, spec):
        return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))

    def moe(x, p):
        """x: [groups, tokens, width]."""
        gates = jax.nn.softmax((x @ p["router"]).astype(jnp.float32), -1)
        combine, aux = top2_masks(gates, capacity)
        dispatch = (combine > 0).astype(x.dtype)
        combine = combine.astype(x.dtype)
        # Dispatch where the groups lie, then move each expert's slots to
        # its shard (an all-to-all over 'expert'), and back after.
        by_group = P(None, ("data", "expert"), None, None)
        by_expert = P("expert", "data", None, None)
        expert_in = constrain(jnp.einsum("gsec,gsm->egcm", dispatch, x), by_group)
        expert_in = constrain(expert_in, by_expert)
        h = jax.nn.gelu(jnp.einsum("egcm,emh->egch", expert_in, p["wi"]))
        out = constrain(jnp.einsum("egch,ehm->egcm", h, p["wo"]), by_expert)
        out = constrain(out, by_group)
        y = jnp.einsum("gsec,egcm->gsm", combine, out)
        return y, aux

    def norm(x, g):
        v = jnp.mean(x.astype(jnp.float32) ** 2, -1, keepdims=True)
        return (x * jax.lax.rsqrt(v + 1e-6).astype(x.dtype)) * g

    def body(x, p):
        y, aux = moe(norm(x, p["g"]), p)
        return x + y, aux

    def loss(params, x, target):
        y, aux = jax.lax.scan(body, x, params)
        mse = jnp.mean((y - target).astype(jnp.float32) ** 2)
        return mse + 1e-2 * jnp.mean(aux)

    def train_step(params, x, target):
        value, g = jax.value_and_grad(loss)(params, x, target)
        return jax.tree.map(lambda a, b: a - 1e-3 * b, params, g), value

    return train_step


def program(size: str, topology: str, mesh: dict[str, int]) -> Program:
    n, d, h, e, s, per_device, factor = SIZES[size]
    capacity = math.ceil(factor * 2 * s / e)
    abstract = AbstractMesh(tuple(mesh.values()), tuple(mesh))

    def inputs(m: Mesh):
        def arg(shape, spec, dtype=jnp.bfloat16):
            return jax.ShapeDtypeStruct(shape, dtype,
                                        sharding=NamedSharding(m, spec))
        experts = P(None, "expert", None, None)
        params = {"g": arg((n, d), P()), "router": arg((n, d, e), P()),
                  "wi": arg((n, e, d, h), experts),
                  "wo": arg((n, e, h, d), experts)}
        batch = per_device * m.devices.size
        data = P(("data", "expert"), None, None)
        return params, arg((batch, s, d), data), arg((batch, s, d), data)

    return Program(name=f"moe_{size}", step=make_step(capacity, abstract),
                   inputs=inputs, topology=topology, mesh=mesh, donate=(0,),
                   recipe={"model": "mixture-of-experts FFN stack",
                           "layers": n, "width": d, "expert_hidden": h,
                           "experts": e, "top_k": 2, "group_tokens": s,
                           "capacity_factor": factor, "capacity": capacity,
                           "per_device_batch": per_device, "scan_layers": True,
                           "sharding": "expert x data (GShard einsum "
                                       "dispatch, all-to-all)"})
