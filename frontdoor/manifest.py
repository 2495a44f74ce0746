"""MANIFEST.md of a step set built by frontdoor.steps: what the set is, the
software that compiled it, and each row: its builder, compile time, peak
memory and module size, or why it was not built."""

from __future__ import annotations

import json
import pathlib

from frontdoor import step_rows

HEAD = """# Whole training steps, compiled (tpusim measurement set)

Made by `scripts/build_steps.sh {csv} OUT` (frontdoor/steps.py); see docs/STEPS.md.
Each row is a published, measured training step (shared/data/step-times: MaxText's
performance tables on v4 and v5e, tpu-recipes on v6e), beside the per-device program
XLA's TPU compiler (libtpu) compiles for that model, batch and slice on this CPU:

- `measurements.csv`: the set's columns; `runtime_ns` = the published `step_s` in ns
  (one step; `timing` device: it has no host dispatch), `source` = the row's
  value_repo, value_path and value_commit, `topology` = the slice as JAX names it
  (e.g. `16x16`, `4x4x12`), `slices` = the number of slices (DCN between them),
  `devices` = the row's device order (below), which `validate` places them by.
- `modules/ID.hlo`: the compiled per-device module (HLO text after XLA's passes).
- `devices/ID.csv`: the mesh's devices in the compile's device-assignment order
  (`index` = the number the module's replica groups use; `id` JAX's device id;
  `x,y,z` the chip's coordinates in its slice; `core_on_chip`; `slice`).
- `records/ID.json`: the recipe (the row as built, MaxText's flags), versions, and
  XLA's cost and memory analyses.

Builders: `maxtext` = MaxText's own model and train step (maxtext 0.2.4 =
AI-Hypercomputer/maxtext 538fe7a3f3376d94cf3f04e77741aa6d7e8efa45, PyPI), the row's flags:
a run with flash attention gets splash attention from tokamax (`use_tokamax_splash`,
Pallas kernels that declare their cost, which tpusim costs them by) with the run's
blocks and scoped VMEM limit, the others `attention=dot_product`, and the run's
DISABLE_COLLECTIVE_MATMUL flag where it names it; `jax` =
frontdoor/zoo/maxtext_like.py, a MaxText-equivalent decoder in plain JAX (flash
attention's blocks, online softmax, in XLA), where MaxText's compile does not fit.
Differences from the measured runs: tokamax's splash kernels for jax's (the same
algorithm), none of the rows' other LIBTPU_INIT_ARGS / XLA flags (async collective
fusion, data-parallel overlap, host offload and SparseCore flags), today's JAX, libtpu
and MaxText instead of the runs'.
Timings below are this machine's (one core per compile) and vary from run to run; the
modules are the same bytes for the same inputs.
"""


def versions(out: pathlib.Path, builds: dict) -> list[str]:
    seen = {}
    for i, b in builds.items():
        rec = out / "records" / f"{i}.json"
        if "error" not in b and rec.exists():
            v = json.loads(rec.read_text())["versions"]
            seen.setdefault(b["builder"], v)
    return [f"- `{b}`: " + ", ".join(f"{k} {v[k]}" for k in sorted(v)) for b, v in sorted(seen.items())]


def text(table: list[dict], out: pathlib.Path, builds: dict, csv_path: str) -> str:
    lines = [HEAD.format(csv=pathlib.Path(csv_path).name), "## Software", ""]
    lines += versions(out, builds) or ["- (nothing built)"]
    built = [r for r in table if "error" not in builds.get(r["id"], {"error": ""})]
    lines += ["", f"## Rows: {len(built)} of {len(table)} built", "",
              "| id | builder | built | compile s | peak MB | module KB | topology | slices | note |",
              "|---|---|---|---|---|---|---|---|---|"]
    for row in table:
        b = builds.get(row["id"])
        try:
            s = step_rows.parse(row)
            topo, slices, note = s.jax_topology, str(s.slices), "; ".join(s.notes)
        except ValueError:
            topo, slices, note = "", row["slices"], ""
        if b is None:
            lines.append(f"| {row['id']} | | no | | | | {topo} | {slices} | not attempted: no run into this folder "
                         f"named it (`scripts/build_steps.sh STEPS.csv OUT {row['id']}`) |")
            continue
        ok = "error" not in b
        why = "; ".join(filter(None, [note, b.get("fallback", "")])) if ok else b["error"]
        why = why.replace("|", "\\|")
        lines.append(f"| {row['id']} | {b['builder']} | {'yes' if ok else 'no'} | "
                     f"{b.get('seconds', '')} | {b.get('peak_mb', '')} | {b.get('module_kb', '')} | "
                     f"{topo} | {slices} | {why} |")
    return "\n".join(lines) + "\n"
