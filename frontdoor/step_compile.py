"""Compiles one row of a step-times table (frontdoor.steps runs this in a
child process of its own, in the builder's environment):

  python -m frontdoor.step_compile {jax|maxtext} ROW.json OUT

writes OUT/ID.tpu.hlo (the per-device module XLA's TPU compiler made),
OUT/ID.json (recipe, versions, XLA's cost and memory analyses) and
OUT/ID.devices.csv (the mesh's devices in the compile's device-assignment
order: the ids in the module's replica groups index this list).
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
import tempfile
from collections.abc import Sequence
from importlib.metadata import version
from typing import Any

from frontdoor.compile import compile_program, generation, make_mesh, versions
from frontdoor.step_rows import Step


def device_table(devices: Sequence[Any]) -> str:
    """index,id,x,y,z,core_on_chip,slice for the devices in mesh order."""
    lines = ["index,id,x,y,z,core_on_chip,slice"]
    for i, d in enumerate(devices):
        x, y, z = (list(d.coords) + [0, 0, 0])[:3]
        lines.append(f"{i},{d.id},{x},{y},{z},{d.core_on_chip},"
                     f"{getattr(d, 'slice_index', 0) or 0}")
    return "\n".join(lines) + "\n"


def build_jax(s: Step, out: pathlib.Path) -> None:
    from frontdoor.zoo import maxtext_like

    p = maxtext_like.program(s)
    with tempfile.TemporaryDirectory() as tmp:
        compiled = compile_program(p, pathlib.Path(tmp))
        folder = compiled.parent
        (out / f"{s.id}.tpu.hlo").write_text(compiled.read_text())
        (out / f"{s.id}.json").write_text((folder / f"{s.id}.json").read_text())
    mesh = make_mesh(p.topology, p.mesh, p.topology_args, p.arrange)
    (out / f"{s.id}.devices.csv").write_text(device_table(list(mesh.devices.flat)))


def build_maxtext(s: Step, out: pathlib.Path) -> None:
    from frontdoor import maxtext_train

    compiled, mesh = maxtext_train.compile_row(s)
    cost = compiled.cost_analysis()
    memory = compiled.memory_analysis()
    record = {
        "program": s.id,
        "recipe": {"builder": "maxtext", "flags": maxtext_train.flags(s, "OUT")[1:],
                   "row": s.to_json()},
        "topology": s.jax_topology,
        "devices": mesh.devices.size,
        "device_kind": mesh.devices.flat[0].device_kind,
        "mesh": dict(mesh.shape),
        "versions": versions() | {"maxtext": version("maxtext")},
        "cost_analysis": {k: cost[k] for k in sorted(cost)
                          if k in ("flops", "bytes accessed", "transcendentals")},
        "memory_analysis": {k: getattr(memory, k) for k in sorted(dir(memory))
                            if k.endswith("_in_bytes")},
    }
    (out / f"{s.id}.tpu.hlo").write_text(compiled.as_text())
    (out / f"{s.id}.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    (out / f"{s.id}.devices.csv").write_text(device_table(list(mesh.devices.flat)))


def main(argv: Sequence[str] | None = None) -> None:
    builder, row, out = argv or sys.argv[1:]
    s = Step.from_json(json.loads(pathlib.Path(row).read_text()))
    generation(s.jax_topology)
    # the run's flags, before libtpu starts: its scoped VMEM limit (its
    # splash blocks need it; the set column costs the row with it) and
    # the ones that change the program (step_rows.LIBTPU_FLAGS)
    flags = [f"--xla_tpu_scoped_vmem_limit_kib={s.vmem_limit_kib}"] if s.vmem_limit_kib else []
    os.environ["LIBTPU_INIT_ARGS"] = " ".join(
        [os.environ.get("LIBTPU_INIT_ARGS", ""), *flags, *s.libtpu_flags]).strip()
    out_dir = pathlib.Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    {"jax": build_jax, "maxtext": build_maxtext}[builder](s, out_dir)


if __name__ == "__main__":
    main()
