"""A MaxText-equivalent decoder training step, written in plain JAX, for
the rows of the step-times table that MaxText's own code cannot compile here
(frontdoor/steps.py says which and why).

The same layers, dimensions, remat, shardings and precision as MaxText
(maxtext 0.2.4, src/maxtext/layers/decoders.py and configs/base.yml):
token embedding (a one-hot matmul with use_iota_embed), layers under
lax.scan, RMSNorm, RoPE, causal attention with grouped KV heads, the MLP
of the model's activations (one relu wi; or gated silu/gelu, SwiGLU), a
dropping top-k mixture of experts with dense dispatch and combine einsums
(Mixtral), Gemma 3's 5 local (sliding window) : 1 global layers with the
post-attention and post-MLP norms, GPT-3's LayerNorm and learned positions
(without its biases; q, k and v as three matmuls, not one fused), bf16 activations, float32 parameters
unless the row sets weight_dtype, and the AdamW update with global-norm
clipping (MaxText's defaults: b1 0.9, b2 0.95, eps 1e-8, weight decay 0.1,
clip 1.0), its moments sharded like the parameters.

Attention is plain XLA: MaxText's flash attention is a Pallas (Mosaic)
kernel, one opaque custom call that tpusim cannot read. It is computed as
flash attention computes it, in blocks (the row's sa_block_q): for each
block of queries a scan over the blocks of keys up to the diagonal (or in
the sliding window), with an online softmax, each step rematerialised, so
that its memory is flash attention's, a block of scores at a time, and its
FLOPs skip the blocks above the diagonal as flash attention does. (Plain
dot-product attention at these lengths does not fit the chip: XLA's TPU
compiler stops with RESOURCE_EXHAUSTED.)

Shardings are MaxText's logical rules over a (data, fsdp, fsdp_transpose,
tensor, expert) mesh: weights' embed dimension over fsdp (and expert for
the dense weights), their mlp dimension over fsdp_transpose and tensor,
heads over tensor, experts over expert; activations' batch over data,
fsdp, fsdp_transpose and expert.
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.ad_checkpoint import checkpoint_name
from jax.experimental import mesh_utils
from jax.sharding import AbstractMesh, Mesh, NamedSharding, PartitionSpec as P

from frontdoor.compile import Program
from frontdoor.step_rows import AXES, Step
from frontdoor.zoo.decoder import rms
from frontdoor.zoo.moe import top2_masks

BATCH = ("data", "fsdp", "fsdp_transpose", "expert")
EMBED = ("fsdp", "expert")          # a dense weight's embed dimension
EXPERT_EMBED = ("fsdp",)            # an expert weight's embed dimension
MLP = ("fsdp_transpose", "tensor")
HEADS = "tensor"
VOCAB = "tensor"

# Gemma 3: five sliding-window layers, then one global (configs/models/gemma3-12b.yml)
GEMMA3_PATTERN = 6
GEMMA3_WINDOW = 1024
ROPE_THETA = {"llama2": 500_000.0, "mistral": 1_000_000.0, "mixtral": 1_000_000.0,
              "gemma3": 1_000_000.0, "default": 10_000.0, "gpt3": 0.0}
# use_iota_embed's one-hot [batch, length, vocab] per device, at most (Gemma 3
# at 32768 x 262144 would hold 16 GiB of it); past that the embedding gathers
ONE_HOT_BYTES = 2 * 2**30
GPT3_POSITIONS = 16384   # trainable_position_size (configs/models/gpt3-175b.yml)
GEMMA3_LOCAL_THETA = 10_000.0


def remat_policy(s: Step):
    """MaxText's remat_policy (layers/decoders.py get_remat_policy,
    utils/maxtext_utils.py get_save_and_offload_names) as a JAX policy."""
    name = s.remat_policy
    cp = jax.checkpoint_policies
    qkv = ["query_proj", "value_proj", "key_proj"]
    if name == "full":
        return cp.nothing_saveable
    if name == "minimal":
        return cp.checkpoint_dots_with_no_batch_dims
    if name == "save_qkv_proj":
        return cp.save_only_these_names(*qkv)
    if name == "save_dot_except_mlp":
        return cp.save_only_these_names(*qkv, "out_proj")
    if name == "save_dot_except_mlpwi":
        return cp.save_only_these_names(*qkv, "out_proj", "mlpwo")
    if name in ("qkv_proj_offloaded", "custom"):
        saved, offloaded = [], qkv
        if name == "custom":
            where = {k: s.settings[k] for k in NAMES if k in s.settings}
            saved = [k for k, v in where.items() if v == "device"]
            offloaded = [k for k, v in where.items() if v == "offload"]
        return cp.save_and_offload_only_these_names(
            names_which_can_be_saved=saved, names_which_can_be_offloaded=offloaded,
            offload_src="device", offload_dst="pinned_host")
    raise ValueError(f"remat_policy={name}: not modelled")


# The activations MaxText names for its custom remat policy.
NAMES = ("decoder_layer_input", "query_proj", "key_proj", "value_proj",
         "context", "out_proj", "mlpwi", "mlpwi_0", "mlpwi_1", "mlpwo")


def rope(x, theta: float):
    """Rotary position embedding over [batch, length, heads, head_dim]."""
    d = x.shape[-1]
    freq = theta ** (-jnp.arange(0, d, 2, dtype=jnp.float32) / d)
    angle = jnp.arange(x.shape[1], dtype=jnp.float32)[:, None] * freq
    sin, cos = jnp.sin(angle)[:, None], jnp.cos(angle)[:, None]
    a, b = jnp.split(x.astype(jnp.float32), 2, axis=-1)
    return jnp.concatenate([a * cos - b * sin, b * cos + a * sin], -1).astype(x.dtype)


def attention(q, k, v, block: int, window: int = 0):
    """Causal attention with grouped KV heads, flash attention's way in
    plain XLA: for each block of queries, a scan over the blocks of keys up
    to the diagonal (or over the sliding window) with an online softmax,
    each step rematerialised; one block of scores at a time, and no FLOPs
    above the diagonal."""
    b, t, h, d = q.shape
    kv = k.shape[2]
    n = t // block
    q = q.reshape(b, t, kv, h // kv, d)
    ks = k.reshape(b, n, block, kv, d).swapaxes(0, 1)
    vs = v.reshape(b, n, block, kv, d).swapaxes(0, 1)
    pos = jnp.arange(block)
    out = []
    for i in range(n):
        qi = q[:, i * block:(i + 1) * block]
        first = max(0, (i * block - window + 1) // block) if window else 0

        def step(carry, x, qi=qi, i=i):
            m, l, acc = carry
            j, kj, vj = x
            s = jnp.einsum("btkgd,bskd->bkgts", qi, kj, preferred_element_type=jnp.float32)
            t_, u = i * block + pos[:, None], j * block + pos[None, :]
            keep = u <= t_
            if window:
                keep &= t_ - u < window
            m_new = jnp.maximum(m, jnp.max(jnp.where(keep, s, -jnp.inf), -1))
            p = jnp.where(keep, jnp.exp(s - m_new[..., None]), 0.0)
            scale = jnp.exp(m - m_new)
            l = l * scale + jnp.sum(p, -1)
            acc = acc * scale[..., None] + jnp.einsum(
                "bkgts,bskd->bkgtd", p.astype(vj.dtype), vj, preferred_element_type=jnp.float32)
            return (m_new, l, acc), None

        shape = (b, kv, h // kv, block)
        init = (jnp.full(shape, -1e30, jnp.float32), jnp.zeros(shape, jnp.float32),
                jnp.zeros(shape + (d,), jnp.float32))
        (m, l, acc), _ = jax.lax.scan(
            jax.checkpoint(step), init,
            (jnp.arange(first, i + 1), ks[first:i + 1], vs[first:i + 1]))
        out.append(jnp.moveaxis((acc / l[..., None]).astype(v.dtype), 3, 1))
    return jnp.concatenate(out, 1).reshape(b, t, h, d)


def query_block(s: Step) -> int:
    """The row's flash block (sa_block_q, else 512), dividing the sequence."""
    block = min(s.seq, int(s.settings.get("sa_block_q", 512)))
    while s.seq % block:
        block //= 2
    return block


class Model:
    """The step's functions for one row on one mesh."""

    def __init__(self, s: Step, mesh: AbstractMesh):
        self.s = s
        self.mesh = mesh
        self.batch = s.global_batch // math.prod(mesh.shape[a] for a in BATCH)
        self.block = query_block(s)
        self.act = jnp.bfloat16

    def constrain(self, x, *spec):
        return jax.lax.with_sharding_constraint(x, NamedSharding(self.mesh, P(*spec)))

    def mlp(self, h, p):
        s = self.s
        if len(s.activations) == 1:
            f = jax.nn.relu if s.activations[0] == "relu" else partial(jax.nn.gelu, approximate=True)
            x = checkpoint_name(f(h @ p["wi"].astype(self.act)), "mlpwi")
        else:
            f = jax.nn.silu if s.activations[0] == "silu" else partial(jax.nn.gelu, approximate=True)
            x = (checkpoint_name(f(h @ p["wi_0"].astype(self.act)), "mlpwi_0")
                 * checkpoint_name(h @ p["wi_1"].astype(self.act), "mlpwi_1"))
        x = self.constrain(x, BATCH, None, "tensor")
        return checkpoint_name(x @ p["wo"].astype(self.act), "mlpwo")

    def moe(self, h, p):
        """Dropping top-2 routing with dense dispatch and combine (MaxText
        megablox=False, sparse_matmul=False, capacity_factor)."""
        s = self.s
        b, t, d = h.shape
        factor = float(s.settings.get("capacity_factor", 1.25))
        capacity = math.ceil(factor * s.top_k * t / s.experts)
        gates = jax.nn.softmax((h @ p["gate"].astype(self.act)).astype(jnp.float32), -1)
        combine, _ = top2_masks(gates, capacity)
        dispatch = (combine > 0).astype(self.act)
        x = jnp.einsum("gsec,gsm->egcm", dispatch, h)
        x = self.constrain(x, "expert", ("data", "fsdp", "fsdp_transpose"), None, None)
        f = jax.nn.silu
        y = (f(jnp.einsum("egcm,emh->egch", x, p["wi_0"].astype(self.act)))
             * jnp.einsum("egcm,emh->egch", x, p["wi_1"].astype(self.act)))
        y = jnp.einsum("egch,ehm->egcm", y, p["wo"].astype(self.act))
        y = self.constrain(y, "expert", ("data", "fsdp", "fsdp_transpose"), None, None)
        return jnp.einsum("gsec,egcm->gsm", combine.astype(self.act), y)

    def attend(self, h, p, window: int = 0, theta: float | None = None):
        s = self.s
        b, t, _ = h.shape
        q = checkpoint_name(jnp.einsum("btm,mhd->bthd", h, p["wq"].astype(self.act)), "query_proj")
        k = checkpoint_name(jnp.einsum("btm,mhd->bthd", h, p["wk"].astype(self.act)), "key_proj")
        v = checkpoint_name(jnp.einsum("btm,mhd->bthd", h, p["wv"].astype(self.act)), "value_proj")
        if s.block == "gemma3":
            q, k = rms(q, p["q_norm"].astype(self.act)), rms(k, p["k_norm"].astype(self.act))
        theta = theta or ROPE_THETA[s.block]
        if theta:   # GPT-3: learned positions instead, added to the embedding
            q, k = rope(q, theta), rope(k, theta)
        q = q * jnp.asarray(s.head_dim ** -0.5, self.act)
        q = self.constrain(q, BATCH, None, HEADS, None)
        x = checkpoint_name(attention(q, k, v, self.block, window), "context")
        x = self.constrain(x, BATCH, None, HEADS, None)
        return checkpoint_name(jnp.einsum("bthd,hdm->btm", x, p["wo"].astype(self.act)), "out_proj")

    def norm(self, x, g):
        """RMSNorm; GPT-3's LayerNorm (mean removed) for decoder_block gpt3."""
        if self.s.block == "gpt3":
            x = x - jnp.mean(x.astype(jnp.float32), -1, keepdims=True).astype(x.dtype)
        return rms(x, g.astype(self.act))

    def layer(self, x, p, local: bool = False):
        s = self.s
        x = checkpoint_name(self.constrain(x, BATCH, None, None), "decoder_layer_input")
        h = self.norm(x, p["norm1"])
        if s.block == "default":           # MaxText's default block: parallel
            return x + self.attend(h, p["attn"]) + self.mlp(h, p["mlp"])
        if s.block == "gemma3":
            a = self.attend(h, p["attn"], GEMMA3_WINDOW if local else 0,
                            GEMMA3_LOCAL_THETA if local else None)
            x = x + rms(a, p["norm_post_attn"].astype(self.act))
            m = self.mlp(rms(x, p["norm2"].astype(self.act)), p["mlp"])
            return x + rms(m, p["norm_post_mlp"].astype(self.act))
        x = x + self.attend(h, p["attn"])
        h = self.norm(x, p["norm2"])
        return x + (self.moe(h, p["mlp"]) if s.experts else self.mlp(h, p["mlp"]))

    def body(self, x, p):
        if self.s.block == "gemma3":       # one scanned block: 5 local, 1 global
            for i in range(GEMMA3_PATTERN):
                x = self.layer(x, jax.tree.map(lambda a: a[i], p),
                               local=i < GEMMA3_PATTERN - 1)
            return x, None
        return self.layer(x, p), None

    def embed(self, table, tokens):
        iota = self.s.settings.get("use_iota_embed", "").lower() == "true"
        if iota and self.batch * self.s.seq * self.s.vocab * 2 <= ONE_HOT_BYTES:
            hot = (tokens[..., None] == jnp.arange(self.s.vocab)).astype(self.act)
            x = hot @ table.astype(self.act)
        else:
            x = table.astype(self.act)[tokens]
        if self.s.block == "gemma3":
            x = x * jnp.asarray(math.sqrt(self.s.d_model), self.act)
        return x

    def positions(self, params, x):
        if self.s.block != "gpt3":
            return x
        return x + params["positions"][:x.shape[1]].astype(self.act)

    def logits_loss(self, params, x, targets):
        """Mean cross entropy, in num_vocab_tiling chunks of the tokens."""
        x = self.norm(x, params["norm_final"])
        w = (params["embed"].T if self.s.tied_embedding else params["logits"]).astype(self.act)
        tiles = int(self.s.settings.get("num_vocab_tiling", 1))

        def chunk(x, t):
            z = self.constrain(x @ w, BATCH, None, VOCAB)
            if self.s.tied_embedding and self.s.block == "default":
                z = z / jnp.sqrt(jnp.asarray(self.s.d_model, z.dtype))
            # f32 inside the reductions, the logits themselves bf16
            lse = jax.nn.logsumexp(z.astype(jnp.float32), -1)
            picked = jnp.take_along_axis(z, t[..., None], -1)[..., 0].astype(jnp.float32)
            return jnp.sum(lse - picked)

        if tiles == 1:
            return chunk(x, targets) / targets.size
        b, t, d = x.shape
        xs = x.reshape(b, tiles, t // tiles, d).swapaxes(0, 1)
        ts = targets.reshape(b, tiles, t // tiles).swapaxes(0, 1)
        total, _ = jax.lax.scan(
            lambda c, a: (c + jax.checkpoint(chunk)(*a), None), jnp.float32(0), (xs, ts))
        return total / targets.size

    def loss(self, params, tokens):
        x = self.positions(params, self.embed(params["embed"], tokens[:, :-1]))
        body = jax.checkpoint(self.body, policy=remat_policy(self.s), prevent_cse=False)
        x, _ = jax.lax.scan(body, x, params["layers"])
        return self.logits_loss(params, x, tokens[:, 1:])

    def train_step(self, state, tokens):
        """One AdamW step with global-norm clipping."""
        params, mu, nu, count = state["params"], state["mu"], state["nu"], state["count"]
        loss, g = jax.value_and_grad(self.loss)(params, tokens)
        norm = jnp.sqrt(sum(jnp.sum(jnp.square(x.astype(jnp.float32)))
                            for x in jax.tree.leaves(g)))
        scale = jnp.minimum(1.0, 1.0 / (norm + 1e-6))
        count = count + 1
        b1, b2, eps, wd, lr = 0.9, 0.95, 1e-8, 0.1, 3e-5

        def update(p, m, v, g):
            g = g.astype(jnp.float32) * scale
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            mh = m / (1 - b1 ** count)
            vh = v / (1 - b2 ** count)
            step = mh / (jnp.sqrt(vh) + eps) + wd * p.astype(jnp.float32)
            return (p - lr * step).astype(p.dtype), m.astype(p.dtype), v.astype(p.dtype)

        new = jax.tree.map(update, params, mu, nu, g)
        pick = lambda i: jax.tree.map(lambda t: t[i], new, is_leaf=lambda t: isinstance(t, tuple))  # noqa: E731
        return {"params": pick(0), "mu": pick(1), "nu": pick(2), "count": count}, loss


def param_shapes(s: Step) -> dict:
    """Each parameter's (shape, logical spec), layers stacked on axis 0."""
    n, d, h, kv, hd, f, e = (s.layers, s.d_model, s.heads, s.kv_heads,
                             s.head_dim, s.d_ff, s.experts)
    stack = (n // GEMMA3_PATTERN, GEMMA3_PATTERN) if s.block == "gemma3" else (n,)
    lead = (None,) * len(stack)
    attn = {"wq": ((d, h, hd), (EMBED, HEADS, None)),
            "wk": ((d, kv, hd), (EMBED, HEADS, None)),
            "wv": ((d, kv, hd), (EMBED, HEADS, None)),
            "wo": ((h, hd, d), (HEADS, None, EMBED))}
    if s.block == "gemma3":
        attn |= {"q_norm": ((hd,), (None,)), "k_norm": ((hd,), (None,))}
    if e:
        mlp = {"gate": ((d, e), (EMBED, None)),
               "wi_0": ((e, d, f), ("expert", EXPERT_EMBED, MLP)),
               "wi_1": ((e, d, f), ("expert", EXPERT_EMBED, MLP)),
               "wo": ((e, f, d), ("expert", MLP, EXPERT_EMBED))}
    elif len(s.activations) == 1:
        mlp = {"wi": ((d, f), (EMBED, MLP)), "wo": ((f, d), (MLP, EMBED))}
    else:
        mlp = {"wi_0": ((d, f), (EMBED, MLP)), "wi_1": ((d, f), (EMBED, MLP)),
               "wo": ((f, d), (MLP, EMBED))}
    norms = ["norm1"] if s.block == "default" else ["norm1", "norm2"]
    if s.block == "gemma3":
        norms += ["norm_post_attn", "norm_post_mlp"]
    layer = {"attn": attn, "mlp": mlp} | {k: ((d,), (None,)) for k in norms}
    layer = jax.tree.map(lambda sp: (stack + sp[0], lead + sp[1]), layer,
                         is_leaf=lambda x: isinstance(x, tuple) and isinstance(x[0], tuple))
    out = {"embed": ((s.vocab, d), (VOCAB, EMBED)), "norm_final": ((d,), (None,)),
           "layers": layer}
    if not s.tied_embedding:
        out["logits"] = ((d, s.vocab), (EMBED, VOCAB))
    if s.block == "gpt3":
        out["positions"] = ((GPT3_POSITIONS, d), (None, EMBED))
    return out


def arrange(s: Step):
    """MaxText's device order: mesh_utils.create_device_mesh within a slice,
    create_hybrid_device_mesh across slices (maxtext_utils.create_device_mesh)."""
    ici = tuple(s.ici[a] for a in AXES)
    dcn = tuple(s.dcn[a] for a in AXES)

    def devices(devs, shape):
        if s.slices > 1:
            grid = mesh_utils.create_hybrid_device_mesh(
                ici, dcn, devs, allow_split_physical_axes=True)
        else:
            grid = mesh_utils.create_device_mesh(ici, devs, allow_split_physical_axes=True)
        return np.asarray(grid).reshape(shape)

    return devices


def program(s: Step) -> Program:
    if s.block not in ROPE_THETA:
        raise ValueError(f"decoder_block {s.block}: not modelled by the JAX builder")
    if s.settings.get("quantization"):
        raise ValueError(f"quantization={s.settings['quantization']}: not modelled "
                         "by the JAX builder")
    wdtype = jnp.bfloat16 if s.weight_dtype == "bfloat16" else jnp.float32
    mesh = {a: s.ici[a] * s.dcn[a] for a in AXES}

    def inputs(m: Mesh):
        def arg(shape_spec, dtype=wdtype):
            shape, spec = shape_spec
            return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(m, P(*spec)))

        shapes = param_shapes(s)
        leaf = lambda x: isinstance(x, tuple) and isinstance(x[0], tuple)  # noqa: E731
        params = jax.tree.map(arg, shapes, is_leaf=leaf)
        state = {"params": params, "mu": params, "nu": params,
                 "count": arg(((), ()), jnp.int32)}
        tokens = arg(((s.global_batch, s.seq + 1), (BATCH, None)), jnp.int32)
        return state, tokens

    model = Model(s, AbstractMesh(tuple(mesh.values()), tuple(mesh)))

    return Program(
        name=s.id, step=model.train_step, inputs=inputs, topology=s.jax_topology, mesh=mesh,
        donate=(0,), arrange=arrange(s),
        topology_args=topology_args(s),
        recipe={"builder": "jax (frontdoor/zoo/maxtext_like.py)", "row": s.to_json()})


def topology_args(s: Step) -> tuple:
    args = [("num_slices", s.slices), ("wrap", s.wrap)]
    if s.chip_config != "default":
        args.insert(0, ("chip_config_name", s.chip_config))
    return tuple(args)
