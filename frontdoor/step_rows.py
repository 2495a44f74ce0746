"""The rows of a step-times table (shared/data/step-times/steps.csv) as the
settings of the training step each one measured.

No JAX here: the parent process of frontdoor.steps reads rows with it, and
each compile (frontdoor.step_compile) reads its row back from the JSON the
parent hands it.
"""

from __future__ import annotations

import csv
import math
import pathlib
import re
from dataclasses import asdict, dataclass, field
from typing import Any

# MaxText's model configs (src/maxtext/configs/models/NAME.yml): the same
# dimensions at tpu-recipes-v0.1.2 (14b5876ea857c09cc3d8645385f984689376a331,
# MaxText/configs/models/), tpu-recipes-v0.1.5 (50bafeb98299458f73d853b1325787a6d241d10c)
# and maxtext 0.2.4 (538fe7a3f3376d94cf3f04e77741aa6d7e8efa45); the recipe
# rows name the model and leave these columns empty.
# name: (block, layers, d_model, q heads, kv heads, head_dim, d_ff,
#        activations, vocab, tied embedding, experts, experts per token)
MODELS: dict[str, tuple] = {
    "llama3.1-8b": ("llama2", 32, 4096, 32, 8, 128, 14336, ("silu", "linear"), 128256, False, 0, 0),
    "llama3.1-70b": ("llama2", 80, 8192, 64, 8, 128, 28672, ("silu", "linear"), 128256, False, 0, 0),
    "llama3.1-405b": ("llama2", 126, 16384, 128, 8, 128, 53248, ("silu", "linear"), 128256, False, 0, 0),
    "llama2-70b": ("llama2", 80, 8192, 64, 8, 128, 28672, ("silu", "linear"), 32000, False, 0, 0),
    "mistral-7b": ("mistral", 32, 4096, 32, 8, 128, 14336, ("silu", "linear"), 32000, False, 0, 0),
    "mixtral-8x7b": ("mixtral", 32, 4096, 32, 8, 128, 14336, ("silu", "linear"), 32000, False, 8, 2),
    "mixtral-8x22b": ("mixtral", 56, 6144, 48, 8, 128, 16384, ("silu", "linear"), 32768, False, 8, 2),
    "gemma3-12b": ("gemma3", 48, 3840, 16, 8, 256, 15360, ("gelu", "linear"), 262144, True, 0, 0),
    "gpt3-175b": ("gpt3", 96, 12288, 96, 96, 128, 49152, ("gelu",), 50304, True, 0, 0),
}
MODELS_CITE = ("AI-Hypercomputer/maxtext src/maxtext/configs/models/*.yml at "
               "538fe7a3f3376d94cf3f04e77741aa6d7e8efa45 (maxtext 0.2.4); the same "
               "dimensions at tpu-recipes-v0.1.2 14b5876ea857c09cc3d8645385f984689376a331")

# The slice of a generation's chips as JAX names it, MaxText's
# get_topology_desc chip config and its torus links (wrap per axis), as
# src/maxtext/utils/accelerator_to_spec_map.py at maxtext 0.2.4 lists them:
# v5e and v6e 2D, an axis wrapping at 16 chips; v4 and v5p 3D, one megacore
# device per chip, every axis wrapping on slices of whole 4x4x4 cubes.
SHAPES_2D = {1: "1x1", 4: "2x2", 8: "2x4", 16: "4x4", 32: "4x8", 64: "8x8",
             128: "8x16", 256: "16x16"}
SHAPES_3D = {4: "2x2x1", 8: "2x2x2", 16: "2x2x4", 32: "2x4x4", 64: "4x4x4",
             128: "4x4x8", 192: "4x4x12", 256: "4x8x8", 320: "4x4x20",
             384: "4x8x12", 448: "4x4x28", 512: "8x8x8", 576: "4x12x12",
             768: "8x8x12", 1024: "8x8x16", 2048: "8x16x16", 4096: "16x16x16"}


def slice_of(hw: str, chips: int) -> tuple[str, str, tuple[bool, bool, bool]]:
    """(shape, chip config, wrap) of a slice of `chips` chips of hw."""
    if hw in ("v5e", "v6e") and chips in SHAPES_2D:
        shape = SHAPES_2D[chips]
        dims = [int(d) for d in shape.split("x")]
        return shape, "default", (dims[0] == 16, dims[1] == 16, False)
    if hw in ("v4", "v5p") and chips in SHAPES_3D:
        shape = SHAPES_3D[chips]
        cube = all(int(d) % 4 == 0 for d in shape.split("x"))
        return shape, "megacore", (cube, cube, cube)
    raise ValueError(f"no known {hw} slice of {chips} chips")


# HBM per chip (hwspecs/GEN.yaml), for the builder's choice below.
HBM_GIB = {"v4": 32, "v5e": 16, "v5p": 95, "v6e": 32}

# The scoped VMEM limits of the recipes' xla_flags_library names, KiB
# (AI-Hypercomputer/maxtext benchmarks/xla_flags_library.py: _DENSE_VMEM_LIMIT
# and _MOE_VMEM_LIMIT): a splash attention kernel of the recipes' blocks
# does not fit the default.
VMEM_LIMIT_KIB = {"DENSE_VMEM_LIMIT_FLAG": 98304, "MOE_VMEM_LIMIT_FLAG": 81920}
# CUSTOM_VMEM_LIMIT_FLAG takes its value from the recipe's model config
# (benchmarks/maxtext_trillium_model_configs.py @ tpu-recipes-v0.1.5,
# vmem_limit=122880 for each), which the row names.
CUSTOM_VMEM_LIMIT_KIB = {"gemma3_12b_32768_v6e256": 122880,
                         "gemma3_12b_32768_2x_v6e256": 122880,
                         "gemma3_12b_32768_4x_v6e256": 122880}

# The recipes' xla_flags_library names that change the program XLA makes
# and that the builder passes to libtpu as they are (the same file):
# DISABLE_COLLECTIVE_MATMUL keeps XLA's SPMD partitioner from writing a
# dot as a windowed einsum (a loop of collective-permutes and partial
# matmuls). The others (async collective fusion, data-parallel overlap,
# SparseCore and host-offload flags) are not applied.
LIBTPU_FLAGS = {
    "DISABLE_COLLECTIVE_MATMUL": "--xla_jf_spmd_threshold_for_windowed_einsum_mib=1000000",
}

# MaxText's mesh axes that these rows use, in MaxText's order.
AXES = ("data", "fsdp", "fsdp_transpose", "tensor", "expert")


@dataclass(frozen=True)
class Step:
    """One row: the model, the slice and the settings of its training step."""

    id: str
    hw: str
    model: str                 # the row's model column
    model_name: str            # MaxText model_name, "" for dims given in the row
    block: str                 # MaxText decoder_block
    layers: int
    d_model: int
    heads: int
    kv_heads: int
    head_dim: int
    d_ff: int
    activations: tuple[str, ...]
    vocab: int
    tied_embedding: bool
    experts: int
    top_k: int
    seq: int
    per_device_batch: float
    global_batch: int
    slices: int
    chips_per_slice: int
    topology: str              # e.g. "16x16"
    chip_config: str           # "megacore" or "default"
    wrap: tuple[bool, bool, bool]
    ici: dict[str, int]        # mesh axis -> size within a slice
    dcn: dict[str, int]        # mesh axis -> size across slices
    settings: dict[str, str]   # the row's other_settings as key=value
    vmem_limit_kib: int        # the run's scoped VMEM limit, 0: libtpu's
    runtime_ns: int
    source: str
    notes: list[str] = field(default_factory=list)
    libtpu_flags: tuple[str, ...] = ()  # LIBTPU_FLAGS the row names

    @property
    def chips(self) -> int:
        return self.slices * self.chips_per_slice

    @property
    def jax_topology(self) -> str:
        return f"{self.hw}:{self.topology}"

    @property
    def maxtext_topology(self) -> str:
        """MaxText's compile_topology name (v4 and v5p count TensorCores)."""
        cores = 2 if self.hw in ("v4", "v5p") else 1
        return f"{self.hw}-{self.chips_per_slice * cores}"

    @property
    def remat_policy(self) -> str:
        return self.settings.get("remat_policy", "full")

    @property
    def weight_dtype(self) -> str:
        return self.settings.get("weight_dtype", "float32")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(d: dict[str, Any]) -> "Step":
        d = dict(d)
        d["activations"] = tuple(d["activations"])
        d["wrap"] = tuple(d["wrap"])
        d["libtpu_flags"] = tuple(d.get("libtpu_flags", ()))
        return Step(**d)


def settings(text: str) -> dict[str, str]:
    """other_settings ("k=v; k=v ..., words") -> {k: v} of its k=v words."""
    out = {}
    for part in text.split(";"):
        for word in part.split():
            key, eq, value = word.partition("=")
            if eq and re.fullmatch(r"[a-z_0-9]+", key):
                out.setdefault(key, value.rstrip(","))
    return out


def mesh_sizes(text: str, slices: int, chips: int) -> tuple[dict, dict]:
    """The parallelism column -> (ici, dcn) axis sizes, MaxText's defaults
    (ici_fsdp_parallelism=-1, dcn_data_parallelism=-1) where not given;
    -1 takes what the others leave."""
    given = {}
    for word in re.findall(r"\b(ici|dcn)_([a-z_]+)_parallelism=(-?\d+)", text):
        given[(word[0], word[1])] = int(word[2])
    sizes = {}
    for net, total in (("ici", chips), ("dcn", slices)):
        axes = {a: given.get((net, a), 1) for a in AXES}
        if (net, "fsdp") not in given and net == "ici":
            axes["fsdp"] = -1
        if (net, "data") not in given and net == "dcn":
            axes["data"] = -1
        free = [a for a, n in axes.items() if n == -1]
        if len(free) > 1:
            raise ValueError(f"{text}: {net} has more than one -1 axis")
        known = math.prod(n for n in axes.values() if n != -1)
        if free:
            axes[free[0]] = total // known
        if math.prod(axes.values()) != total:
            raise ValueError(f"{text}: {net} axes {axes} do not make {total}")
        sizes[net] = axes
    return sizes["ici"], sizes["dcn"]


def model_name(row: dict[str, str]) -> str:
    """The MaxText model_name of a recipe row ("(model_type llama3.1-8b)")."""
    m = re.search(r"model_type ([a-z0-9.\-]+)\)", row["other_settings"])
    return m.group(1) if m else ""


def parse(row: dict[str, str]) -> Step:
    hw = row["hw"]
    slices = int(row["slices"])
    chips = int(row["chips"])
    per_slice = int(row["chips_per_slice"] or chips // slices)
    topology, chip_config, wrap = slice_of(hw, per_slice)
    ici, dcn = mesh_sizes(row["parallelism"], slices, per_slice)
    opts = settings(row["other_settings"])
    notes = []
    name = model_name(row)
    if row["layers"]:
        acts = ("relu",) if row["mlp_activation"].startswith("relu") else ("silu", "linear")
        dims = ("default", int(row["layers"]), int(row["d_model"]), int(row["num_heads"]),
                int(row["num_heads"]), int(row["head_dim"]), int(row["d_ff"]), acts,
                int(row["vocab"]), True, 0, 0)
        name = ""
    elif name in MODELS:
        dims = MODELS[name]
    else:
        raise ValueError(f"model '{row['model']}': no dimensions in the row and "
                         f"no MaxText config known for '{name}'")
    seq = int(row["seq_len"])
    global_batch = int(row["global_batch"])
    pdb = float(row["per_device_batch"])
    if global_batch != round(pdb * chips):
        notes.append(f"global_batch {global_batch} != per_device_batch {row['per_device_batch']}"
                     f" x {chips} chips: built with the logged global batch "
                     f"({global_batch / chips:g} per chip)")
        pdb = global_batch / chips
    return Step(
        id=row["id"], hw=hw, model=row["model"], model_name=name, block=dims[0],
        layers=dims[1], d_model=dims[2], heads=dims[3], kv_heads=dims[4],
        head_dim=dims[5], d_ff=dims[6], activations=tuple(dims[7]), vocab=dims[8],
        tied_embedding=dims[9], experts=dims[10], top_k=dims[11], seq=seq,
        per_device_batch=pdb, global_batch=global_batch, slices=slices,
        chips_per_slice=per_slice, topology=topology, chip_config=chip_config,
        wrap=wrap, ici=ici, dcn=dcn, settings=opts,
        vmem_limit_kib=vmem_limit_kib(row["other_settings"]),
        runtime_ns=round(float(row["step_s"]) * 1e9),
        source=" ".join(filter(None, (row["value_repo"], row["value_path"],
                                      row["value_commit"]))),
        notes=notes,
        libtpu_flags=tuple(f for n, f in LIBTPU_FLAGS.items()
                           if n in row["other_settings"]))


def vmem_limit_kib(settings: str) -> int:
    """The run's scoped VMEM limit, KiB, from its xla_flags_library names
    and model config; 0: libtpu's default."""
    if "CUSTOM_VMEM_LIMIT_FLAG" in settings:
        m = re.search(r"model name ([a-z0-9_]+)", settings)
        name = m.group(1) if m else ""
        if name not in CUSTOM_VMEM_LIMIT_KIB:
            raise ValueError(f"CUSTOM_VMEM_LIMIT_FLAG of model config {name!r}: its value is not known")
        return CUSTOM_VMEM_LIMIT_KIB[name]
    return max((VMEM_LIMIT_KIB[n] for n in VMEM_LIMIT_KIB if n in settings), default=0)


def read(path: pathlib.Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def flash(s: Step) -> bool:
    """Whether the run used MaxText's flash (splash) attention."""
    return s.settings.get("attention") == "flash"


def attention_scores_gib(s: Step) -> float:
    """One layer's attention scores per device, f32, as plain dot-product
    attention materialises them."""
    batch = s.global_batch / s.chips
    return batch * s.heads * s.seq * s.seq * 4 / 2**30
