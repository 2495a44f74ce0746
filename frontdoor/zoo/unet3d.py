"""A 3D U-Net training step (as MLPerf's unet3d, smaller): per level two
3x3x3 convolutions each with instance norm and relu, down by a stride-2
3x3x3 convolution, up by a stride-2 2x2x2 transposed convolution and a skip
concatenation, a 1x1x1 classifier, voxel-wise softmax cross-entropy and SGD.
jax.lax.conv_general_dilated and conv_transpose in NDHWC/DHWIO with bf16
operands and f32 parameters. Data parallel: the volumes sharded over 'data',
parameters replicated."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from frontdoor.compile import Program

# channels per level, volume side, input channels, classes, volumes per device
# (libtpu compiles 3D convolutions slowly, the more so for few volumes per
# device: 64^3 volumes took over 2 minutes, hence 16^3 and 32^3)
SIZES = {
    "s": ((8, 16, 32), 16, 1, 3, 8),
    "m": ((8, 16, 32, 64), 32, 1, 3, 8),
}

DN = ("NDHWC", "DHWIO", "NDHWC")


def shapes(channels, c_in, classes):
    """Each convolution's kernel shape, by name."""
    params = {}
    for i, c in enumerate(channels):
        params[f"down{i}a"] = (3, 3, 3, c_in, c)
        params[f"down{i}b"] = (3, 3, 3, c, c)
        c_in = c
    for i in reversed(range(len(channels) - 1)):
        c = channels[i]
        params[f"up{i}t"] = (2, 2, 2, channels[i + 1], c)
        params[f"up{i}a"] = (3, 3, 3, 2 * c, c)
        params[f"up{i}b"] = (3, 3, 3, c, c)
    params["out"] = (1, 1, 1, channels[0], classes)
    return params


def conv(x, w, stride=1):
    return jax.lax.conv_general_dilated(
        x, w.astype(jnp.bfloat16), (stride,) * 3, "SAME", dimension_numbers=DN)


def norm_relu(x):
    """Instance norm (each volume and channel over space) and relu."""
    xf = x.astype(jnp.float32)
    mean = jnp.mean(xf, (1, 2, 3), keepdims=True)
    var = jnp.mean(jnp.square(xf - mean), (1, 2, 3), keepdims=True)
    return jax.nn.relu((xf - mean) * jax.lax.rsqrt(var + 1e-5)).astype(x.dtype)


def make_step(levels: int):
    def forward(params, x):
        skips = []
        for i in range(levels):
            x = norm_relu(conv(x, params[f"down{i}a"], 2 if i else 1))
            x = norm_relu(conv(x, params[f"down{i}b"]))
            skips.append(x)
        for i in reversed(range(levels - 1)):
            x = jax.lax.conv_transpose(
                x, params[f"up{i}t"].astype(jnp.bfloat16), (2, 2, 2), "SAME",
                dimension_numbers=DN)
            x = jnp.concatenate([x, skips[i]], -1)
            x = norm_relu(conv(x, params[f"up{i}a"]))
            x = norm_relu(conv(x, params[f"up{i}b"]))
        return conv(x, params["out"]).astype(jnp.float32)

    def loss(params, volumes, labels):
        logp = jax.nn.log_softmax(forward(params, volumes), -1)
        return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], -1))

    def train_step(params, volumes, labels):
        value, g = jax.value_and_grad(loss)(params, volumes, labels)
        return jax.tree.map(lambda a, b: a - 1e-2 * b, params, g), value

    return train_step


def program(size: str, topology: str, mesh: dict[str, int]) -> Program:
    channels, side, c_in, classes, per_device = SIZES[size]

    def inputs(m: Mesh):
        def arg(shape, spec, dtype=jnp.float32):
            return jax.ShapeDtypeStruct(shape, dtype,
                                        sharding=NamedSharding(m, spec))
        params = {k: arg(v, P()) for k, v in shapes(channels, c_in, classes).items()}
        batch = per_device * m.devices.size
        volumes = arg((batch, side, side, side, c_in), P("data"), jnp.bfloat16)
        labels = arg((batch, side, side, side), P("data"), jnp.int32)
        return params, volumes, labels

    return Program(name=f"unet3d_{size}", step=make_step(len(channels)),
                   inputs=inputs, topology=topology, mesh=mesh, donate=(0,),
                   recipe={"model": "3D U-Net", "channels": list(channels),
                           "volume": side, "in_channels": c_in,
                           "classes": classes, "per_device_batch": per_device,
                           "norm": "instance",
                           "sharding": "data parallel"})
