"""Builds a measurement set of whole training steps from a step-times table
(shared/data/step-times/steps.csv): for each row, the per-device program
XLA's TPU compiler compiles for that model on that slice, beside the
published step time.

  python -m frontdoor.steps STEPS.csv OUT [ID ...] [--builder auto|jax|maxtext]
                            [--timeout S] [--core N]

(scripts/build_steps.sh runs it in the front door's environment). OUT gets
the shared set format that `tpusim validate --data OUT` reads:

  measurements.csv   id,module,hw,config,runtime_ns,runtime_min_ns,repeats,
                     timing,source + topology (the slice as JAX names it,
                     e.g. 16x16, 4x4x4), slices, devices (the file
                     below) and set (the run's scoped VMEM limit, as
                     vmem.scoped_bytes, where its flags raise it)
  modules/ID.hlo     the compiled per-device module
  devices/ID.csv     the mesh's devices in the compile's device order
                     (index, id, chip coordinates, core, slice)
  records/ID.json    recipe, versions, XLA's cost and memory analyses
  MANIFEST.md        what the set is, versions, each row's builder, compile
                     time, peak memory and module size, and every row not
                     built with its reason
  builds.json        the same per row, read back by later runs

Each row compiles in a child process of its own (isolation, its peak
memory, a timeout), pinned to one core; a failure is recorded with its
error. Each row goes into OUT as soon as it is built, its files and its
result together under OUT's lock (each file written whole, then renamed),
so runs into the same OUT can go side by side (one per core, other rows)
and a run cut short keeps what it built.
Rows not named keep what an earlier run into OUT built.

Builders: `maxtext` compiles with MaxText's own code (maxtext 0.2.4 in
.venv-maxtext, frontdoor/maxtext_train.py); `jax` with the MaxText-equivalent
model of frontdoor/zoo/maxtext_like.py. `auto` takes MaxText for a run
with flash attention (its splash kernels, which declare their cost), or
where its plain dot-product attention fits the chip (one layer's f32 scores
at most a quarter of HBM); the JAX model where it does not, or when
.venv-maxtext is missing; and the JAX model again where MaxText's compile
runs out of HBM all the same.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

from frontdoor import step_rows
from frontdoor.step_rows import HBM_GIB, Step

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAXTEXT_PYTHON = ROOT / ".venv-maxtext" / "bin" / "python"
COLUMNS = ("id,module,hw,config,runtime_ns,runtime_min_ns,repeats,timing,"
           "source,topology,slices,devices,set")


def choose(s: Step, want: str) -> str:
    if want != "auto":
        return want
    if not MAXTEXT_PYTHON.exists():
        return "jax"
    if s.settings.get("quantization") or step_rows.flash(s):
        return "maxtext"
    return "maxtext" if step_rows.attention_scores_gib(s) <= HBM_GIB[s.hw] / 4 else "jax"


def run_child(builder: str, s: Step, out: pathlib.Path, timeout: float,
              core: int | None) -> dict:
    """Compiles s in a child process; its time, peak memory and error."""
    python = str(MAXTEXT_PYTHON) if builder == "maxtext" else sys.executable
    row = out / f"{s.id}.row.json"
    row.write_text(json.dumps(s.to_json(), indent=1, sort_keys=True))
    env = dict(os.environ, PYTHONHASHSEED="0",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    log = out / f"{s.id}.log"
    start = time.monotonic()
    with open(log, "w") as f:
        child = subprocess.Popen(
            [python, "-m", "frontdoor.step_compile", builder, str(row), str(out)],
            stdout=f, stderr=subprocess.STDOUT, env=env,
            preexec_fn=(lambda: os.sched_setaffinity(0, {core})) if core is not None else None)
        status, usage, timed_out = wait(child, timeout)
    seconds = time.monotonic() - start
    result = {"builder": builder, "seconds": round(seconds, 1),
              "peak_mb": round(usage.ru_maxrss / 1024)}
    if timed_out:
        result["error"] = f"timed out after {timeout:g} s"
    elif status != 0:
        result["error"] = last_error(log.read_text(errors="replace"), status)
    return result


def wait(child: subprocess.Popen, timeout: float):
    """(exit status, rusage, timed out) of the child, killed at timeout."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            child.returncode = os.waitstatus_to_exitcode(status)
            return child.returncode, usage, False
        if time.monotonic() > deadline:
            child.kill()
            _, status, usage = os.wait4(child.pid, 0)
            child.returncode = os.waitstatus_to_exitcode(status)
            return child.returncode, usage, True
        time.sleep(0.5)


def last_error(log: str, status: int) -> str:
    """The error a failed compile ended with: its last exception line."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ("Error" in ln or "error:" in ln) and not ln.startswith("File "):
            return ln[:600]
    return f"exited {status}: " + (lines[-1][:300] if lines else "no output")


def build(rows: list[dict], table: list[dict], out: pathlib.Path, csv_path: str,
          want: str, timeout: float, core: int | None) -> None:
    for d in ("modules", "devices", "records"):
        (out / d).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        for row in rows:
            try:
                s = step_rows.parse(row)
                builder = choose(s, want)
            except ValueError as e:
                record(table, out, csv_path, row["id"],
                       {"builder": "-", "error": f"row not understood: {e}"})
                continue
            print(f"{s.id}: {builder} ...", file=sys.stderr, flush=True)
            result = run_child(builder, s, work, timeout, core)
            if want == "auto" and builder == "maxtext" and "RESOURCE_EXHAUSTED" in result.get("error", ""):
                # MaxText's dot-product attention does not fit after all
                print(f"{s.id}: {result['error']}; jax ...", file=sys.stderr, flush=True)
                first = result
                result = run_child("jax", s, work, timeout, core)
                result["fallback"] = f"maxtext: {first['error']} ({first['seconds']} s)"
            hlo = work / f"{s.id}.tpu.hlo"
            if "error" not in result and not hlo.exists():
                result["error"] = "the compile wrote no module"
            if "error" not in result:
                result["module_kb"] = round(hlo.stat().st_size / 1024)
            record(table, out, csv_path, s.id, result, {
                work / f"{s.id}.tpu.hlo": out / "modules" / f"{s.id}.hlo",
                work / f"{s.id}.devices.csv": out / "devices" / f"{s.id}.csv",
                work / f"{s.id}.json": out / "records" / f"{s.id}.json"})
            print(f"{s.id}: {'built' if 'error' not in result else result['error']}"
                  f" ({result['seconds']} s, {result['peak_mb']} MB)", file=sys.stderr, flush=True)


def record(table: list[dict], out: pathlib.Path, csv_path: str,
           row_id: str | None = None, result: dict | None = None,
           files: dict[pathlib.Path, pathlib.Path] | None = None) -> int:
    """Under OUT's lock: a row's files (made -> kept: copied when it built,
    the kept ones removed when it did not) and its result in
    OUT/builds.json (none: only reads it), then measurements.csv and
    MANIFEST.md rewritten from it; the number of rows built."""
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for made, kept in (files or {}).items():
            if "error" in result:
                kept.unlink(missing_ok=True)
            else:
                write_whole(kept, made.read_bytes())
        state = out / "builds.json"
        builds = json.loads(state.read_text()) if state.exists() else {}
        if row_id is not None:
            builds[row_id] = result
        builds = {r["id"]: builds[r["id"]] for r in table if r["id"] in builds}
        write_whole(state, (json.dumps(builds, indent=1, sort_keys=True) + "\n").encode())
        n = write_measurements(table, out, builds)
        write_manifest(table, out, builds, csv_path)
    return n


def write_whole(path: pathlib.Path, data: bytes) -> None:
    """path's new bytes, written to a temporary file of this process's
    beside it, then renamed over it."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)   # as open() would make it, not mkstemp's 0600
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\n') else text


def write_measurements(table: list[dict], out: pathlib.Path, builds: dict) -> int:
    lines = [COLUMNS]
    for row in table:
        if "error" in builds.get(row["id"], {"error": ""}):
            continue
        s = step_rows.parse(row)
        lines.append(",".join([
            quote(s.id), quote(f"modules/{s.id}.hlo"), f"tpu-{s.hw}", "", str(s.runtime_ns),
            "", "", "device", quote(s.source), s.topology, str(s.slices),
            quote(f"devices/{s.id}.csv"),
            f"vmem.scoped_bytes={s.vmem_limit_kib * 1024}" if s.vmem_limit_kib else ""]))
    write_whole(out / "measurements.csv", ("\n".join(lines) + "\n").encode())
    return len(lines) - 1


def write_manifest(table: list[dict], out: pathlib.Path, builds: dict, csv_path: str) -> None:
    from frontdoor import manifest

    write_whole(out / "MANIFEST.md", manifest.text(table, out, builds, csv_path).encode())


def main(argv: Sequence[str] | None = None) -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, "-m", "frontdoor.steps",
                                  *(argv or sys.argv[1:])])
    ap = argparse.ArgumentParser(prog="frontdoor.steps", description=__doc__.split("\n\n")[0])
    ap.add_argument("steps", help="the step-times table (steps.csv)")
    ap.add_argument("out", help="the set's folder")
    ap.add_argument("ids", nargs="*", help="rows to build (default: all)")
    ap.add_argument("--builder", choices=("auto", "jax", "maxtext"), default="auto")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per row")
    ap.add_argument("--core", type=int, default=min(os.sched_getaffinity(0)),
                    help="the one core each compile runs on (-1: any)")
    a = ap.parse_args(argv)
    table = step_rows.read(pathlib.Path(a.steps))
    known = {r["id"] for r in table}
    unknown = [i for i in a.ids if i not in known]
    if unknown:
        raise SystemExit(f"{a.steps}: no row {', '.join(unknown)}")
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    todo = [r for r in table if not a.ids or r["id"] in a.ids]
    build(todo, table, out, a.steps, a.builder, a.timeout, None if a.core < 0 else a.core)
    n = record(table, out, a.steps)
    print(f"{out}: {n} of {len(table)} rows built", file=sys.stderr)


if __name__ == "__main__":
    main()
