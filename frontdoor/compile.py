"""Compiles a JAX step function for a TPU slice on this CPU, for tpusim.

XLA's TPU compiler in libtpu compiles ahead of time for a topology with no
TPU attached (jax.experimental.topologies gives compile-only devices). For a
step function, its abstract inputs and a topology this writes, under
OUT/GEN/ (GEN as hwspecs/ names the generation):

  NAME.pre.hlo   the module before XLA's passes (global shapes, shardings)
  NAME.spmd.hlo  the module one device runs, before XLA fuses it: after the
                 SPMD partitioner, its simplifications and layout
                 assignment, as the TPU pipeline's first fusion pass
                 (tpu_fusion, in the Main_fusion pipeline) receives it
  NAME.tpu.hlo   the module XLA compiled for one device of the slice
  NAME.json      XLA's cost and memory analyses and the recipe: function,
                 topology, mesh, input shapes and shardings, versions

and prints the `tpusim run` line for the compiled module. Usage:

  python -m frontdoor.compile MODULE:FUNCTION --inputs MODULE:INPUTS \
      --topology v5e:2x2 --mesh data=4 [--name NAME] [--out DIR]

INPUTS(mesh) returns the step's arguments as jax.ShapeDtypeStruct trees
with NamedShardings over mesh (see frontdoor/zoo/ for examples).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pathlib
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# No TPU is attached: the default backend stays the CPU, the topology brings
# up a compile-only TPU client, and libtpu asks no cloud metadata server and
# looks for no other hosts.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
os.environ.setdefault("TPU_WORKER_HOSTNAMES", "localhost")
# Compiling needs no exclusive hold of a TPU: several compiles may run.
os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.experimental import topologies  # noqa: E402
from jax.sharding import Mesh  # noqa: E402

# Source locations in the modules' metadata: the op's own line only (not
# the whole Python stack, which would put this tool's lines in every
# module), its file without folders, so the text is the same wherever the
# checkout lies.
jax.config.update("jax_include_full_tracebacks_in_locations", False)
jax.config.update("jax_hlo_source_file_canonicalization_regex", ".*/")

# libtpu's generation prefix -> the hwspecs/ file of that generation.
GENERATIONS = {
    "v2": "v2",
    "v3": "v3",
    "v4": "v4",
    "v5e": "v5e",
    "v5p": "v5p",
    "v6e": "v6e",
    "tpu7x": "v7",
}


@dataclass(frozen=True)
class Program:
    """A step function with its inputs, compiled for one topology."""

    name: str
    step: Callable[..., Any]
    inputs: Callable[[Mesh], Sequence[Any]]
    topology: str
    mesh: dict[str, int]
    recipe: dict[str, Any]
    donate: tuple[int, ...] = ()
    # get_topology_desc's keyword arguments, e.g. chip_config_name,
    # num_slices, wrap
    topology_args: tuple[tuple[str, Any], ...] = ()
    # (devices, mesh shape) -> the devices as an array of that shape: the
    # mesh's device order (default: the topology's order, reshaped)
    arrange: Callable[[Sequence[Any], tuple[int, ...]], np.ndarray] | None = None


def generation(topology: str) -> str:
    """The hwspecs/ name of a topology's generation ("v5e:2x2" -> "v5e")."""
    prefix = topology.split(":", 1)[0]
    if prefix not in GENERATIONS:
        raise SystemExit(
            f"--topology {topology}: unknown generation '{prefix}'; "
            f"known: {', '.join(GENERATIONS)}"
        )
    return GENERATIONS[prefix]


def make_mesh(topology: str, axes: dict[str, int],
              topology_args: tuple[tuple[str, Any], ...] = (),
              arrange: Callable[[Sequence[Any], tuple[int, ...]],
                                np.ndarray] | None = None) -> Mesh:
    """A mesh with the named axes over the topology's compile-only devices,
    in the topology's order or as arrange(devices, shape) lays them."""
    devices = topologies.get_topology_desc(
        topology, platform="tpu", **dict(topology_args)).devices
    shape = tuple(axes.values())
    if int(np.prod(shape)) != len(devices):
        raise SystemExit(
            f"--mesh {axes}: {int(np.prod(shape))} devices, but {topology} "
            f"has {len(devices)}"
        )
    grid = (np.array(devices).reshape(shape) if arrange is None
            else arrange(devices, shape))
    return Mesh(grid, tuple(axes))


def describe(args: Sequence[Any]) -> list[str]:
    """Each input leaf as 'dtype[shape] spec'."""
    leaves = jax.tree_util.tree_leaves_with_path(args)
    return [
        f"{jax.tree_util.keystr(path)}: {leaf.dtype}{list(leaf.shape)} "
        f"{leaf.sharding.spec}"
        for path, leaf in leaves
    ]


def versions() -> dict[str, str]:
    import jaxlib
    from importlib.metadata import version

    return {
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "libtpu": version("libtpu"),
        "python": sys.version.split()[0],
    }


# XLA dumps the module around each pass whose name matches the regex, as
# DUMP/module_N.NAME.cl_HASH.SEQ.PIPELINE.after_PASS.before_PASS.txt; a
# pipeline dumps at its start, so the Main_fusion pipeline's start, before
# its first pass tpu_fusion, is always there: the per-device module unfused.
FUSION_PASS = "tpu_fusion"
DUMP_OPTIONS = {
    "xla_dump_hlo_as_text": True,
    "xla_dump_hlo_pass_re": f"^{FUSION_PASS}$",
}


def before_fusion(dump: pathlib.Path) -> str:
    """The module in XLA's dump as the first fusion pass received it."""
    found = sorted(dump.glob(f"*.after_pipeline-start.before_{FUSION_PASS}.txt"))
    if not found:
        raise SystemExit(
            f"{dump}: XLA dumped no module before {FUSION_PASS} (has this "
            "libtpu renamed the pass?)")
    return found[0].read_text()


def compile_program(p: Program, out: pathlib.Path) -> pathlib.Path:
    """Writes p's four files under out/GEN/; returns the compiled one."""
    gen = generation(p.topology)
    mesh = make_mesh(p.topology, p.mesh, p.topology_args, p.arrange)
    args = p.inputs(mesh)
    start = time.perf_counter()
    lowered = jax.jit(p.step, donate_argnums=p.donate).lower(*args)
    # The dump options reach this compile only; they leave the compiled
    # module as it is (the same bytes without them).
    with tempfile.TemporaryDirectory() as dump:
        compiled = lowered.compile(
            compiler_options={"xla_dump_to": dump, **DUMP_OPTIONS})
        spmd = before_fusion(pathlib.Path(dump))
    seconds = time.perf_counter() - start
    memory = compiled.memory_analysis()
    cost = compiled.cost_analysis()
    record = {
        "program": p.name,
        "recipe": p.recipe,
        "topology": p.topology,
        "topology_args": dict(p.topology_args),
        "devices": mesh.devices.size,
        "device_kind": mesh.devices.flat[0].device_kind,
        "mesh": p.mesh,
        "inputs": describe(args),
        "versions": versions(),
        "cost_analysis": {k: cost[k] for k in sorted(cost)},
        "memory_analysis": {
            k: getattr(memory, k)
            for k in sorted(dir(memory))
            if k.endswith("_in_bytes")
        },
    }
    folder = out / gen
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        f"{p.name}.pre.hlo": lowered.as_text(dialect="hlo"),
        f"{p.name}.spmd.hlo": spmd,
        f"{p.name}.tpu.hlo": compiled.as_text(),
        f"{p.name}.json": json.dumps(record, indent=1, sort_keys=True) + "\n",
    }
    for file, text in files.items():
        tmp = folder / f".{file}.tmp"
        tmp.write_text(text)
        tmp.replace(folder / file)
    print(f"{gen}/{p.name}: compiled for {p.topology} in {seconds:.1f} s",
          file=sys.stderr)
    return folder / f"{p.name}.tpu.hlo"


def load(ref: str) -> Callable[..., Any]:
    """MODULE:NAME -> the object."""
    module, _, name = ref.partition(":")
    if not name:
        raise SystemExit(f"{ref}: expected MODULE:NAME")
    return getattr(importlib.import_module(module), name)


def parse_mesh(text: str) -> dict[str, int]:
    axes = {}
    for part in text.split(","):
        axis, _, size = part.partition("=")
        if not axis or not size.isdigit() or int(size) < 1:
            raise SystemExit(f"--mesh {text}: expected AXIS=N[,AXIS=N...]")
        axes[axis] = int(size)
    return axes


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="frontdoor.compile",
        description="Compile a JAX step function for a TPU slice on this "
        "CPU and print the tpusim run line.",
    )
    ap.add_argument("step", help="MODULE:FUNCTION, the step function")
    ap.add_argument("--inputs", required=True,
                    help="MODULE:FUNCTION, mesh -> the step's arguments")
    ap.add_argument("--topology", required=True, help="e.g. v5e:2x2")
    ap.add_argument("--mesh", required=True, help="e.g. data=4 or data=2,model=2")
    ap.add_argument("--name", help="file stem (default: the function's name)")
    ap.add_argument("--out", default="compiled", help="folder (default compiled)")
    a = ap.parse_args(argv)
    step = load(a.step)
    name = a.name or a.step.rpartition(":")[2]
    p = Program(name=name, step=step, inputs=load(a.inputs),
                topology=a.topology, mesh=parse_mesh(a.mesh),
                recipe={"step": a.step, "inputs": a.inputs})
    path = compile_program(p, pathlib.Path(a.out))
    root = pathlib.Path(__file__).resolve().parent.parent
    print(f"{root / 'build/cli/tpusim'} run {path} "
          f"--hw {root / 'hwspecs' / (generation(a.topology) + '.yaml')}")


if __name__ == "__main__":
    main()
