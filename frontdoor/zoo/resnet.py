"""A ResNet-50-style training step: a 7x7/2 stem and 3x3/2 max pool, four
stages of bottleneck blocks (1x1, 3x3, 1x1 with 4x expansion, the stride on
the 3x3, a projection shortcut at each stage's first block), global average
pool, a dense classifier, softmax cross-entropy and SGD. Convolutions are
jax.lax.conv_general_dilated in NHWC/HWIO with bf16 operands and f32
parameters; batch norm in training mode (statistics of the global batch,
running averages updated); each stage's blocks after the first scanned. Data parallel: the batch sharded over 'data',
parameters and statistics replicated."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from frontdoor.compile import Program

# blocks per stage, first stage's width, image side, classes, images per device
SIZES = {
    "s": ((1, 1, 1, 1), 32, 64, 100, 32),
    "m": ((3, 4, 6, 3), 64, 224, 1000, 16),
}

DN = ("NHWC", "HWIO", "NHWC")


def stages(depths, width):
    """Each stage: name, blocks, in channels, width, out channels, stride."""
    out, c_in = [], width
    for i, depth in enumerate(depths):
        w = width * 2 ** i
        out.append((f"stage{i}", depth, c_in, w, 4 * w, 2 if i else 1))
        c_in = 4 * w
    return out


def conv_shapes(k, c_in, c_out, lead=()):
    """A conv's and its batch norm's parameters and statistics."""
    return ({"w": lead + (k, k, c_in, c_out), "scale": lead + (c_out,),
             "bias": lead + (c_out,)},
            {"mean": lead + (c_out,), "var": lead + (c_out,)})


def block_shapes(c_in, w, c_out, proj, lead=()):
    convs = {"a": (1, c_in, w), "b": (3, w, w), "c": (1, w, c_out)}
    if proj:
        convs["proj"] = (1, c_in, c_out)
    both = {k: conv_shapes(*v, lead) for k, v in convs.items()}
    return {k: v[0] for k, v in both.items()}, {k: v[1] for k, v in both.items()}


def shapes(depths, width, classes):
    """The parameters' and the batch statistics' shapes: a stage's first
    block on its own (it changes the shape), the others stacked (scanned)."""
    params, stats = {}, {}
    params["stem"], stats["stem"] = conv_shapes(7, 3, width)
    for name, depth, c_in, w, c_out, _ in stages(depths, width):
        params[name], stats[name] = {}, {}
        params[name]["first"], stats[name]["first"] = block_shapes(
            c_in, w, c_out, True)
        if depth > 1:
            params[name]["rest"], stats[name]["rest"] = block_shapes(
                c_out, w, c_out, False, (depth - 1,))
    c_last = 4 * width * 2 ** (len(depths) - 1)
    params["head"] = {"w": (c_last, classes), "bias": (classes,)}
    return params, stats


def conv_bn(x, p, st, stride=1, relu=True):
    """Returns the activation and the updated running statistics."""
    y = jax.lax.conv_general_dilated(
        x, p["w"].astype(jnp.bfloat16), (stride, stride), "SAME",
        dimension_numbers=DN)
    yf = y.astype(jnp.float32)
    # One pass over the activation, as flax's BatchNorm (fast variance).
    mean = jnp.mean(yf, (0, 1, 2))
    var = jnp.maximum(jnp.mean(jnp.square(yf), (0, 1, 2)) - jnp.square(mean), 0)
    new = {"mean": 0.9 * st["mean"] + 0.1 * mean,
           "var": 0.9 * st["var"] + 0.1 * var}
    yf = (yf - mean) * jax.lax.rsqrt(var + 1e-5) * p["scale"] + p["bias"]
    return (jax.nn.relu(yf) if relu else yf).astype(jnp.bfloat16), new


def bottleneck(x, p, st, stride=1):
    new = {}
    y, new["a"] = conv_bn(x, p["a"], st["a"])
    y, new["b"] = conv_bn(y, p["b"], st["b"], stride)
    y, new["c"] = conv_bn(y, p["c"], st["c"], relu=False)
    if "proj" in p:
        x, new["proj"] = conv_bn(x, p["proj"], st["proj"], stride, relu=False)
    return jax.nn.relu(x + y), new


def make_step(depths, width):
    def forward(params, stats, x):
        new = {}
        x, new["stem"] = conv_bn(x.astype(jnp.bfloat16), params["stem"],
                                 stats["stem"], 2)
        x = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 3, 3, 1),
                                  (1, 2, 2, 1), "SAME")
        for name, depth, _, _, _, stride in stages(depths, width):
            p, st = params[name], stats[name]
            new[name] = {}
            x, new[name]["first"] = bottleneck(x, p["first"], st["first"], stride)
            if depth > 1:
                x, new[name]["rest"] = jax.lax.scan(
                    lambda x, ps: bottleneck(x, *ps), x, (p["rest"], st["rest"]))
        x = jnp.mean(x.astype(jnp.float32), (1, 2))
        return x @ params["head"]["w"] + params["head"]["bias"], new

    def loss(params, stats, images, labels):
        logits, new = forward(params, stats, images)
        logp = jax.nn.log_softmax(logits, -1)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], -1)), new

    def train_step(params, stats, images, labels):
        (value, new), g = jax.value_and_grad(loss, has_aux=True)(
            params, stats, images, labels)
        params = jax.tree.map(lambda a, b: a - 0.1 * b, params, g)
        return params, new, value

    return train_step


def program(size: str, topology: str, mesh: dict[str, int]) -> Program:
    depths, width, side, classes, per_device = SIZES[size]
    param_shapes, stat_shapes = shapes(depths, width, classes)

    def inputs(m: Mesh):
        def arg(shape, spec, dtype=jnp.float32):
            return jax.ShapeDtypeStruct(shape, dtype,
                                        sharding=NamedSharding(m, spec))
        batch = per_device * m.devices.size
        is_shape = lambda v: isinstance(v, tuple)  # noqa: E731
        params = jax.tree.map(lambda v: arg(v, P()), param_shapes,
                              is_leaf=is_shape)
        stats = jax.tree.map(lambda v: arg(v, P()), stat_shapes,
                             is_leaf=is_shape)
        images = arg((batch, side, side, 3), P("data"), jnp.bfloat16)
        labels = arg((batch,), P("data"), jnp.int32)
        return params, stats, images, labels

    return Program(name=f"resnet_{size}", step=make_step(depths, width),
                   inputs=inputs, topology=topology, mesh=mesh, donate=(0, 1),
                   recipe={"model": "ResNet-50-style (bottleneck)",
                           "blocks": list(depths), "width": width,
                           "image": side, "classes": classes,
                           "per_device_batch": per_device, "scan_blocks": True,
                           "batch_norm": "training mode, global batch",
                           "sharding": "data parallel"})
