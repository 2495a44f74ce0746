"""Op sweeps: one small program per op and shape, not a training step, each
over a 1-D mesh 'x' of every device with the same work per device whatever
their number: GEMMs (bf16, f32, int8 with int32 accumulation, batched),
elementwise chains, row and column reductions, transposes, and collectives
(psum, all_gather, psum_scatter, all_to_all, ppermute) in shard_map.

SIZES names the sweep points; each point's shapes are per device (the
sharded dimension is multiplied by the device count)."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.sharding import AbstractMesh, Mesh, NamedSharding, PartitionSpec as P

from frontdoor.compile import Program

X = P("x")
COLS = P(None, "x")


def gemm(a, b):
    return a @ b


def gemm_int8(a, b):
    return jnp.matmul(a, b, preferred_element_type=jnp.int32)


def bmm(a, b):
    return jnp.einsum("bqd,bdk->bqk", a, b)


def eltwise_bf16(x, y):
    """A gated activation with a residual, as a fused MLP epilogue."""
    return jax.nn.gelu(x * 1.5 + y) * jax.nn.sigmoid(y) + x


def eltwise_f32(x):
    """Transcendentals: exp, log, tanh, rsqrt, with a select."""
    y = jnp.tanh(x) * jnp.exp(-jnp.abs(x)) + jnp.log1p(x * x)
    return jnp.where(x > 0, y, jax.lax.rsqrt(1 + x * x))


def reduce_rows(x):
    return jnp.sum(x, -1)


def reduce_cols(x):
    return jnp.sum(x, 0)


def transpose_2d(x):
    return x.T


def transpose_heads(x):
    """[batch, tokens, heads, dim] -> [batch, heads, tokens, dim]."""
    return jnp.transpose(x, (0, 2, 1, 3))


def collective(kind: str, n: int):
    """A collective over 'x' as a shard_map body, on [rows, cols] shards."""
    def body(x):
        if kind == "all_reduce":
            return jax.lax.psum(x, "x")
        if kind == "all_gather":
            return jax.lax.all_gather(x, "x", axis=0, tiled=True)
        if kind == "reduce_scatter":
            return jax.lax.psum_scatter(x, "x", scatter_dimension=0, tiled=True)
        if kind == "all_to_all":
            return jax.lax.all_to_all(x, "x", 0, 0, tiled=True)
        if kind == "permute":
            return jax.lax.ppermute(x, "x", [(i, (i + 1) % n) for i in range(n)])
        raise ValueError(kind)
    return body


# name -> (function, [(per-device shape, dtype, spec)], the sharded dim of
# each input is multiplied by the device count; for collectives the input
# is the whole array, split over 'x' on dim 0)
Arg = tuple[tuple[int, ...], jnp.dtype, P]
SIZES: dict[str, tuple[str, list[Arg]]] = {
    "gemm_bf16_4k": ("gemm", [((2048, 4096), jnp.bfloat16, X),
                              ((4096, 4096), jnp.bfloat16, P())]),
    "gemm_bf16_skinny": ("gemm", [((8192, 1024), jnp.bfloat16, X),
                                  ((1024, 256), jnp.bfloat16, P())]),
    "gemm_bf16_small_m": ("gemm", [((128, 8192), jnp.bfloat16, X),
                                   ((8192, 8192), jnp.bfloat16, P())]),
    "gemm_f32_2k": ("gemm", [((2048, 2048), jnp.float32, X),
                             ((2048, 2048), jnp.float32, P())]),
    "gemm_int8_4k": ("gemm_int8", [((2048, 4096), jnp.int8, X),
                                   ((4096, 4096), jnp.int8, P())]),
    "bmm_bf16": ("bmm", [((32, 1024, 128), jnp.bfloat16, X),
                         ((32, 128, 1024), jnp.bfloat16, X)]),
    "eltwise_bf16": ("eltwise_bf16", [((4096, 4096), jnp.bfloat16, X),
                                      ((4096, 4096), jnp.bfloat16, X)]),
    "eltwise_f32": ("eltwise_f32", [((2048, 4096), jnp.float32, X)]),
    "reduce_rows": ("reduce_rows", [((8192, 4096), jnp.float32, X)]),
    "reduce_cols": ("reduce_cols", [((8192, 4096), jnp.float32, COLS)]),
    "transpose_2d": ("transpose_2d", [((4096, 4096), jnp.bfloat16, X)]),
    "transpose_heads": ("transpose_heads",
                        [((8, 2048, 16, 128), jnp.bfloat16, X)]),
    "all_reduce": ("all_reduce", [((4096, 4096), jnp.bfloat16, X)]),
    "all_gather": ("all_gather", [((1024, 4096), jnp.bfloat16, X)]),
    "reduce_scatter": ("reduce_scatter", [((4096, 4096), jnp.bfloat16, X)]),
    "all_to_all": ("all_to_all", [((4096, 4096), jnp.bfloat16, X)]),
    "permute": ("permute", [((4096, 4096), jnp.bfloat16, X)]),
}

OPS: dict[str, Callable[..., jax.Array]] = {
    "gemm": gemm, "gemm_int8": gemm_int8, "bmm": bmm,
    "eltwise_bf16": eltwise_bf16, "eltwise_f32": eltwise_f32,
    "reduce_rows": reduce_rows, "reduce_cols": reduce_cols,
    "transpose_2d": transpose_2d, "transpose_heads": transpose_heads,
}
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all",
               "permute")


def global_shape(shape: tuple[int, ...], spec: P, n: int) -> tuple[int, ...]:
    return tuple(s * n if i < len(spec) and spec[i] == "x" else s
                 for i, s in enumerate(shape))


def program(size: str, topology: str, mesh: dict[str, int]) -> Program:
    op, args = SIZES[size]
    (n,) = mesh.values()
    if op in COLLECTIVES:
        step = jax.shard_map(collective(op, n),
                             mesh=AbstractMesh((n,), ("x",)),
                             in_specs=X, out_specs=X)
    else:
        step = OPS[op]

    def inputs(m: Mesh):
        return [jax.ShapeDtypeStruct(global_shape(shape, spec, n), dtype,
                                     sharding=NamedSharding(m, spec))
                for shape, dtype, spec in args]

    return Program(name=f"ops_{size}", step=step, inputs=inputs,
                   topology=topology, mesh=mesh,
                   recipe={"op": op, "per_device_inputs": [
                       f"{jnp.dtype(d).name}{list(s)} {sp}" for s, d, sp in args]})

