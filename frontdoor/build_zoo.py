"""Compiles the zoo for every generation into data/compiled/GEN/.

  python -m frontdoor.build_zoo [--out DIR] [--check] [--only NAME ...]
                                [--gen GEN ...]

--check compiles into a temporary folder and compares every file's text with
the one in --out (the pinned versions must give the same bytes); it exits 1
naming each file that differs or is missing. Each program is compiled in an
interpreter of its own, under PYTHONHASHSEED=0 (main re-runs itself so when
it is not set): with Python's random string hashes, or after other programs
in the same process, dlrm_s's modules list their source locations
(FileLocations, StackFrames) in another order.
"""

from __future__ import annotations

import argparse
import dataclasses
import filecmp
import multiprocessing
import os
import pathlib
import sys
import tempfile
from collections.abc import Iterator

from frontdoor.compile import Program, compile_program, generation
from frontdoor.zoo import (decode, decoder, dlrm, mlp, moe, ops, resnet, unet3d,
                           vit)

# Generation -> a slice of 4 chips: its topology, get_topology_desc's
# arguments, and the devices JAX sees (v4 as megacore, one per chip; v2, v3
# and 7x one per TensorCore, two per chip).
TOPOLOGIES = {
    "v2": ("v2:2x2", (), 8),
    "v3": ("v3:2x2", (), 8),
    "v4": ("v4:2x2x1", (("chip_config_name", "megacore"),), 4),
    "v5e": ("v5e:2x2", (), 4),
    "v5p": ("v5p:2x2x1", (), 4),
    "v6e": ("v6e:2x2", (), 4),
    "v7": ("tpu7x:2x2x1", (), 8),
}


def programs(gens: list[str]) -> Iterator[Program]:
    for gen in gens:
        topo, args, n = TOPOLOGIES[gen]
        built = [mlp.program(size, topo, {"data": n}) for size in mlp.SIZES]
        built += [decoder.program(size, topo, {"data": n // 2, "model": 2})
                  for size in decoder.SIZES]
        built.append(decoder.program("s", topo, {"data": n // 2, "model": 2},
                                     remat=False))
        built += [decode.program(size, topo, {"data": 2, "model": n // 2})
                  for size in decode.SIZES]
        built += [moe.program(size, topo, {"data": 2, "expert": n // 2})
                  for size in moe.SIZES]
        built += [resnet.program(size, topo, {"data": n})
                  for size in resnet.SIZES]
        built += [vit.program(size, topo, {"data": n}) for size in vit.SIZES]
        built += [unet3d.program(size, topo, {"data": n})
                  for size in unet3d.SIZES]
        built += [dlrm.program(size, topo, {"data": n}) for size in dlrm.SIZES]
        built += [ops.program(point, topo, {"x": n}) for point in ops.SIZES]
        for p in built:
            yield dataclasses.replace(p, topology_args=args)


def compile_alone(gen: str, name: str, out: pathlib.Path) -> None:
    """Compiles the zoo's program NAME for GEN (run in a spawned process)."""
    compile_program(next(p for p in programs([gen]) if p.name == name), out)


def build(todo: list[Program], out: pathlib.Path) -> None:
    """Compiles each program in a fresh interpreter, one after another."""
    spawn = multiprocessing.get_context("spawn")
    for p in todo:
        child = spawn.Process(target=compile_alone,
                              args=(generation(p.topology), p.name, out))
        child.start()
        child.join()
        if child.exitcode:
            raise SystemExit(f"{p.name}: the compile exited {child.exitcode}")


def main() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable,
                 [sys.executable, "-m", "frontdoor.build_zoo", *sys.argv[1:]])
    ap = argparse.ArgumentParser(prog="frontdoor.build_zoo")
    ap.add_argument("--out", default="data/compiled")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--only", nargs="*", default=None,
                    help="program names (e.g. mlp_s) to build")
    ap.add_argument("--gen", nargs="*", default=list(TOPOLOGIES),
                    choices=list(TOPOLOGIES), help="generations to build")
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    todo = [p for p in programs(a.gen) if a.only is None or p.name in a.only]
    if not a.check:
        build(todo, out)
        return
    differ = []
    with tempfile.TemporaryDirectory() as tmp:
        build(todo, pathlib.Path(tmp))
        for new in sorted(pathlib.Path(tmp).rglob("*.*")):
            old = out / new.relative_to(tmp)
            if not old.exists() or not filecmp.cmp(old, new, shallow=False):
                differ.append(str(old))
    for path in differ:
        print(f"{path}: differs from what the pinned versions compile",
              file=sys.stderr)
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
