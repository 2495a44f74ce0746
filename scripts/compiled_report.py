"""Writes docs/COMPILED.md: tpusim on the zoo XLA's TPU compiler made.

  python3 scripts/compiled_report.py TPUSIM [ZOO_DIR] > docs/COMPILED.md

For every generation in ZOO_DIR (default data/compiled, from
frontdoor/build_zoo.py): how the `xla` fusion policy agrees with XLA's TPU
fusions (`tpusim fuse --agreement`: each compiled module unfused, grouped
again, compared), the rules behind the edges it misses, per module
tpusim's FLOPs and bytes against XLA's own cost analysis, with tpusim's
program time, and per module tpusim's program time of the compiled module
against that of XLA's per-device module before fusion (NAME.spmd.hlo)
fused by `tpusim fuse`. Worst first. No measured times: nothing here is a
runtime.
"""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys
import tempfile


def agreement(tpusim: str, files: list[pathlib.Path], policy: str = "xla",
              gen: str = "") -> tuple[list[str], dict[str, int]]:
    """The 'all' row of fuse --agreement and the miss counts by rule; a
    policy other than xla decides on generation gen's spec."""
    spec = [] if policy == "xla" else ["--policy", policy, "--hw",
                                       f"hwspecs/{gen}.yaml"]
    out = subprocess.run([tpusim, "fuse", "--agreement", *spec,
                          *map(str, files)],
                         capture_output=True, text=True, check=True).stdout
    total = next(line.split()[1:] for line in out.splitlines()
                 if line.startswith("all "))
    rules: dict[str, int] = {}
    for line in out.split("by the rule that kept the producer out:")[-1].splitlines():
        m = re.match(r"\s+(.*\S)\s+(\d+)$", line)
        if m:
            rules[m.group(1)] = int(m.group(2))
    return total, rules


def scoped_bytes(gen: str) -> str:
    """vmem.scoped_bytes of hwspecs/GEN.yaml, or of the spec it inherits."""
    text = pathlib.Path(f"hwspecs/{gen}.yaml").read_text()
    m = re.search(r"^vmem:\n(?:  .*\n)*?  scoped_bytes: *(\d+)", text, re.M)
    if m:
        return m.group(1)
    return scoped_bytes(re.search(r"^inherits: *(\w+)\.yaml", text, re.M).group(1))


def no_placement(gen: str) -> list[str]:
    """No room for memory-space assignment: VMEM cut to the scoped limit,
    which a kernel's tiles keep to."""
    return ["--set", f"vmem.bytes={scoped_bytes(gen)}"]


def run(tpusim: str, gen: str, module: pathlib.Path, *opts: str) -> dict:
    """`tpusim run -f json` of a module on its generation's spec."""
    out = subprocess.run([tpusim, "run", str(module), "--hw",
                          f"hwspecs/{gen}.yaml", "-f", "json", *opts],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["modules"][0]


def costs(tpusim: str, gen: str, module: pathlib.Path) -> dict[str, float]:
    """tpusim's counts of the module as run (each kernel times its runs)
    and each kernel once (as XLA's analysis counts a loop body), XLA's."""
    result = run(tpusim, gen, module)
    kernels, total = result["kernels"], result["total"]
    xla = json.loads(module.with_name(
        module.name.replace(".tpu.hlo", ".json")).read_text())["cost_analysis"]
    # XLA's analysis leaves out a count it has none of (a copy's flops)
    return {"flops": total["flops"], "xla_flops": xla.get("flops", 0.0),
            "flops_once": sum(k["flops"] for k in kernels),
            "bytes_once": sum(k["bytes_read"] + k["bytes_written"] for k in kernels),
            "runs": max((k["multiplicity"] for k in kernels), default=1),
            "xla_bytes": xla.get("bytes accessed", 0.0),
            "time_ns": total["time_ns"]}


def fused(tpusim: str, gen: str, spmd: pathlib.Path, tmp: pathlib.Path,
          *opts: str) -> dict:
    """`tpusim fuse` of XLA's per-device module before fusion, then `run`.

    The module may hold XLA's own kCustom fusions already (gather and
    scatter, made by tpu_scatter_gather_normalizer before layout
    assignment; all-reduce-scatter, by the SPMD partitioner); `fuse`
    keeps them as they are. opts (`--set ...`) go to `fuse` and `run`.
    """
    out = tmp / "fused.hlo"
    subprocess.run([tpusim, "fuse", str(spmd), "--hw", f"hwspecs/{gen}.yaml",
                    "-o", str(out), *opts], capture_output=True, check=True)
    return run(tpusim, gen, out, *opts)


def in_hbm(tpu: pathlib.Path, tmp: pathlib.Path) -> pathlib.Path:
    """The compiled module with every buffer in HBM: its layouts' memory
    spaces (S(1) VMEM, ...) dropped, so what XLA's memory-space assignment
    (after fusion) keeps on chip is read and written from HBM again."""
    out = tmp / "in_hbm.hlo"
    out.write_text(re.sub(r"S\(\d+\)\}", "}", tpu.read_text()))
    return out


def collective_ns(module: dict) -> float:
    return sum(k["time_total_ns"] for k in module["kernels"]
               if k["kind"] == "collective")


def policies_section(tpusim: str, zoo: pathlib.Path, gens: list[str]) -> None:
    """The analytic and hybrid policies against XLA's fusions, per
    generation, each deciding on its generation's spec."""
    print("\nThe `analytic` and `hybrid` policies (docs/FUSION.md) on the same "
          "modules, each\ndeciding on its generation's spec (the hybrid with "
          "the shipped model): fusions\nreproduced exactly, edge precision / "
          "recall, and the edges XLA fused that the\npolicy's own decisions "
          "(not XLA's rules) kept apart:\n")
    print("| generation | xla | analytic | hybrid | kept apart by the "
          "analytic / hybrid decisions |\n|---|---|---|---|---|")
    gains: dict[str, list[str]] = {"more": [], "fewer": [], "as many": []}
    same_hybrid = True
    for gen in gens:
        files = sorted((zoo / gen).glob("*.tpu.hlo"))
        cells, own, exact = [], [], []
        for policy in ("xla", "analytic", "hybrid"):
            total, miss = agreement(tpusim, files, policy, gen)
            cells.append(f"{total[1]} ({total[2]} / {total[3]})")
            own.append(str(miss.get("the policy's decision", 0)))
            exact.append(int(total[1]))
        print(f"| {gen} | {' | '.join(cells)} | {' / '.join(own[1:])} |")
        d = exact[1] - exact[0]
        gains["more" if d > 0 else "fewer" if d < 0 else "as many"].append(
            f"{gen} ({d:+d})" if d else gen)
        same_hybrid = same_hybrid and cells[2] == cells[1]
    said = "; ".join(f"{k} on {', '.join(v)}" for k, v in gains.items() if v)
    hybrid = (" The hybrid policy agrees exactly as the analytic one on every "
              "generation." if same_hybrid else "")
    print(f"\nThe analytic policy overturns xla-policy heuristics (a producer "
          f"made a kernel of its own, or one recomputed in every user) where "
          f"the model predicts a gain; against the xla policy it reproduces "
          f"XLA's fusions: {said}. The model's costs, not XLA's rules, decide "
          f"those, and neither set of choices is measured.{hybrid}")


def hbm_bytes(module: dict) -> float:
    return module["total"]["bytes_read"] + module["total"]["bytes_written"]


def ratio(a: float, b: float) -> float:
    """a / b; 1 when both are 0 (both count nothing), inf when only b is."""
    return a / b if b else (1.0 if not a else float("inf"))


def main() -> None:
    tpusim = sys.argv[1]
    zoo = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else "data/compiled")
    gens = sorted(p.name for p in zoo.iterdir() if p.is_dir())
    print("# tpusim on what XLA's TPU compiler made\n")
    print("Regenerated by `python3 scripts/compiled_report.py build/cli/tpusim "
          "> docs/COMPILED.md`\nfrom the zoo in data/compiled (frontdoor/; "
          "JAX and libtpu versions in each\nNAME.json). Compiled on a CPU, "
          "never run: no figure here is a runtime.\n")
    print("## Fusion: the `xla` policy against XLA's TPU fusions, worst first\n")
    rows, rules = [], {}
    for gen in gens:
        files = sorted((zoo / gen).glob("*.tpu.hlo"))
        total, miss = agreement(tpusim, files)
        fusions, reproduced = int(total[0]), int(total[1])
        rows.append((reproduced / fusions, gen, len(files), fusions,
                     reproduced, total[2], total[3]))
        for rule, n in miss.items():
            rules[rule] = rules.get(rule, 0) + n
    print("| generation | modules | XLA fusions | reproduced exactly | "
          "edge precision | edge recall |\n|---|---|---|---|---|---|")
    for share, gen, n, fusions, reproduced, prec, rec in sorted(rows):
        print(f"| {gen} | {n} | {fusions} | {reproduced} ({100 * share:.1f}%) "
              f"| {prec} | {rec} |")
    print("\nEdges XLA fused and the `xla` policy did not, all generations, "
          "by the rule that\nkept the producer out:\n")
    print("| rule | edges |\n|---|---|")
    for rule, n in sorted(rules.items(), key=lambda r: -r[1]):
        print(f"| {rule} | {n} |")
    print("""
What these counts cannot see: the agreement unfuses the compiled module,
where a producer XLA computed in several fusions is already several
instructions, one per fusion, and one it computed once still has its
several users. So every producer with several users it shows is one XLA
did not recompute, and a policy that never recomputed would lose nothing
here. Whether to recompute shows in the program times below, from the
module before fusion: the xla policy now recomputes a producer in the dots
that read it where that reads no more bytes than its value (the logits'
gradient, in both of its convolutions, as XLA's fusion.131 and fusion.136
of v3/decoder_s do), which left the counts above unchanged and took
v3/decoder_s from 1.077 to 0.996, v5e/decoder_s from 1.351 to 1.229 and
v6e/decoder_m from 1.385 to 1.280. The same test now decides whether a
transcendental is recomputed in several kernels: the v4-and-later
attention's exp(scores - row max), which reads two arrays of its size, is
written once, as XLA writes it (2,569 fusions reproduced exactly before,
2,610 after; no program time above moved).""")
    policies_section(tpusim, zoo, gens)
    print("""
Followed since the last report (sim/grouping.c): a bitcast, one buffer under
another shape, is held by every kernel that reads it when each takes it, so
that a producer fuses through it as through a reshape (XLA's modules after
layout assignment have a bitcast where JAX wrote a reshape; the decoders'
convolution fusions slice their layer out of the scan's stacked buffers
through one). Fusions reproduced exactly went from 2,158 to 2,385 of 3,209
(67.2% to 74.3%; v7 47.9% to 73.7%), edge precision and recall stayed at
97.7% and 98.0%, and no measured set moved. Then kernels rooted at
dynamic-update-slices that write windows of one size at the same offsets
merge, as XLA's bitcast_dynamic-update-slice fusions hold a scan's saved
activations (never two updates of one buffer, nor one whose kernel would
read the other's), and a reduce-window over whole rows that broadcasts its
result back (attention's row max) is computed in its users' kernel, as
XLA's softmax fusions hold it: 2,385 to 2,413 (75.2%), recall 98.3%.
Then two loop kernels of one output shape, one reading a value of the
other that it takes once, merge into one that writes both (merge_loops: a
batch-norm's per-channel statistics, XLA's multi-output
broadcast_multiply_fusion in v5e/resnet_s): 2,413 to 2,430 (75.7%),
precision 97.7%, recall 98.8%; v5e/resnet_s 108 to 125 of 167, no module
fewer. Then two reduce-rooted kernels of one operand shape that read one
array whole merge, over different dimensions too (merge_shared: an RMS
norm's two gradients, the decoders' multiply_reduce_fusion): 2,430 to
2,490 (77.6%), +2 or +3 in each of the 21 decoders, no module fewer.
Then a gather's kernel ends after the transposes and reshapes
that follow it (gather_tail), as XLA's gather_fusion does, the embedding's
mask computed apart: 2,490 to 2,534 (79.0%), precision 97.8%, recall
98.6%. Then no kernel computes a pad's operand (the index take_along_axis
builds by padding and adding is a fusion of its own): 2,534 to 2,555
(79.6%), precision 98.1%, recall 98.7%. Then a loop kernel whose value an
update kernel saves into its stack joins it too (merge_loops: the no-remat
decoders' bitcast_dynamic-update-slice fusions compute the residual sum
they save): 2,555 to 2,564 (79.9%), recall 98.8%. Then the custom-call
that marks a gather's indices bitpacked is their buffer under another name,
so the index computation before it is in the gather's kernel: 2,564 to
2,569 (80.1%), recall 99.1%. Then a transcendental read by several kernels is recomputed
in each only where that reads no more bytes than its value (the attention's
exp(scores - row max) is written once): 2,569 to 2,610 (81.3%), precision
98.3%, recall 99.2%. Then a reduce-rooted kernel and a loop kernel of its
reduce's operand's dims that read one array whole merge (merge_shared: a
residual add written in bf16 with the norm's sum of its squares, the
decoders' multiply_reduce_fusion): 2,610 to 2,644 (82.4%), +1 to +3 in 18
modules, one fewer in v5e/moe_s (XLA keeps its routing's cumsum apart from
the one-hot beside it); precision and recall unchanged. Then a
dynamic-slice read by several kernels, one of them into a dot's operand,
is a kernel of its own (XLA's dynamic-slice_bitcast_fusion: a scan's
layer sliced once for the convolutions and the norm that read it): 2,644
to 2,686 (83.7%), +3 to +14 in five decoders (v6e/decoder_s 73 to 87), no
module fewer; precision and recall unchanged, and the program times below
within 1% (the no-remat decoders' slice now written and read). Then a
value that two slices of one kernel read is computed apart (the decoders'
gather indices, built by pads and adds in XLA's add_bitcast_fusion and
read column by column where they are clamped and packed): 2,686 to 2,731
(85.1%), +2 in each of the 21 decoders and v5e/vit_s, +1 in v5e/resnet_s,
no module fewer; precision and recall unchanged. Then a copy that
moves the lane dim (a transpose across lanes) is a kernel alone: in the
compiled modules all 133 such copies are top-level copies (of the 115
copies that permute the other dims only, 48 are fused with a user):
2,731 to 2,780 (86.6%), precision 98.5%, +1 to +6 in 21 modules, no
module fewer. The fused programs gain those copies' kernels, as the
compiled ones have them: v6e/mlp_m 0.95 to 1.00, v6e/mlp_s 1.05 to
1.09, v7/mlp_s 1.04 to 1.06, v6e/decoder_s_noremat 1.15 to 1.21 (five
20 us transposes of a layer's weights, copy.140-144 in the compiled
module), within 5% 35 to 34 modules. Then a gather whose chain of
reshapes and transposes is a scatter's updates is in the scatter's kernel
(XLA's scatter_custom_fusion, every decoder's embedding gradient): 2,780
to 2,801 (87.3%), recall 99.3%, +1 in each of the 21 decoders; no
program time moved. Then no gather's or scatter's kernel computes a copy
its indices come from (all 50 such copies in the compiled modules are
fusions of their own, copy_bitcast_fusion): 2,801 to 2,813 (87.7%), +1 in
12 decoders; no program time moved. Then a dynamic-slice that reaches a
dot's operand through a bitcast regrouping its dims (a layer's weight
split into heads) is sliced in a kernel of its own (all 6 such slices in
the compiled modules are; of the 261 that reach a convolution through
unit dims only, 255 are in its fusion): 2,813 to 2,825 (88.0%), +2 in each
no-remat decoder but v7's; no program time moved by 0.1%. Then a gather's
kernel ends at the reshape after its transposes, and a reshape of that
value that moves data (the take_along_axis result, from the gather's flat
f32[4096] T(1024) back to rows of T(4,128)) is a kernel alone, as all 19
such reshapes in the compiled modules are top-level ones: 2,825 to 2,843
(88.6%), +1 in each decoder but v7's. Then XLA's async collective chains,
which only a compiled module unfused holds (v5e/vit_s and dlrm_s: an
all-gather started by a kCustom fusion with AsyncCollectiveStart, moved on
in the convolution fusion the schedule puts next, ended by one with
AsyncCollectiveDone): the start's and the done's custom-call take the
clone of the collective each reads, and a clone nothing reads joins the
kernel of the dot or convolution before it in the module's order: 2,843 to
2,878 (89.7%), vit_s 104 to 135, dlrm_s 44 to 48; the grouped chain is
costed as the compiled one (the collective moves once, from the start).
Then a slice read by several kernels whose window touches at least 4
times its share of its operand's tiles (one row of an (8,128) tile's
eight) is computed once, and such slices of the same inputs in one
kernel: dlrm_s's eight feature columns of the sparse indices (fusion.77)
and the 16 fusions that read them, 2,878 to 2,895 (90.2%); the 35 slices
that several fusions read and that read their share of the tiles (the
decoders' tokens) are recomputed as before. No program time moved.
Then a value only dots read, each streaming it, is recomputed in each
where that moves fewer HBM bytes than writing it once and reading it in
each, unless its computation holds a transcendental (docs/MODEL.md), and
a divide by a broadcast fuses as a multiply: the softmax's probabilities,
recomputed from the f32 exp in both convolutions that read them, as
XLA's divide_convert_fusions on v2, v3, v5e and v6e: 2,895 to 2,889
(90.0%), 3 fewer on v4 and on v5p, whose decoders write the
probabilities once into on-chip memory (CMEM on v4, VMEM on v5p); the
program times below came closer on 14 modules, further on 5 (by at most
0.01): v6e/decoder_s 1.13 to 1.09, v5e/decoder_s 1.16 to 1.13, v6e/decoder_m
1.19 to 1.16, v5e/decoder_m 1.10 to 1.08.
Memory-space assignment (docs/MODEL.md) follows fusion and leaves this
table alone.""")
    print("\n## Counts against XLA's cost analysis, worst FLOP ratio first\n")
    print("tpusim's FLOPs and HBM bytes of the compiled module (`run -f json`) "
          "beside XLA's\n(`cost_analysis()`: flops, bytes accessed), with "
          "tpusim's program time. XLA's\nanalysis counts a while loop's "
          "body once; so do the ratios here (each kernel\nonce); *runs*: "
          "the most times a kernel runs (a scan over layers or decode\n"
          "steps), *FLOPs as run*: tpusim's count with every kernel times "
          "its runs, what\nits time is of. tpusim counts no FLOPs in a "
          "collective (XLA counts an\nall-reduce's and a reduce-scatter's "
          "adds): those modules are at 0. XLA counts\nevery convert as a FLOP, "
          "a broadcast constant's too; tpusim folds those\n(v5e/ops_eltwise_bf16: "
          "8 converts an element, 5 of them of constants: 23 FLOPs\nan element "
          "against 18). tpusim's bytes are HBM traffic (a kernel's\n"
          "VMEM-resident operands, S(1), move none); XLA's count every operand "
          "and\nresult.\n")
    print("| module | runs | tpusim / XLA FLOPs | tpusim / XLA bytes | FLOPs as run / XLA "
          "| tpusim time |\n|---|---|---|---|---|---|")
    table = []
    for gen in gens:
        for module in sorted((zoo / gen).glob("*.tpu.hlo")):
            c = costs(tpusim, gen, module)
            once = ratio(c["flops_once"], c["xla_flops"])
            table.append((abs(once - 1), f"{gen}/{module.name[:-8]}", c["runs"], once,
                          ratio(c["bytes_once"], c["xla_bytes"]),
                          ratio(c["flops"], c["xla_flops"]), c["time_ns"]))
    for _, name, runs, once, bytes_ratio, as_run, t in sorted(table, reverse=True):
        print(f"| {name} | {runs} | {once:.3f} | {bytes_ratio:.3g} | {as_run:.3f} | "
              f"{t / 1e6:.3f} ms |")
    within = sum(1 for row in table if row[0] <= 0.01)
    print(f"\nFLOPs within 1% of XLA's, each kernel once: {within} of {len(table)} modules.")
    spmd_section(tpusim, zoo, gens)


# Why the worst modules of the section below disagree, found kernel by
# kernel (`tpusim run -f json`, `--explain`) when the zoo was last compiled.
CAUSES = """\
- Memory-space assignment, now on both sides (the ratios in HBM are of fusion
  alone). tpusim prefetches XLA's cross-program parameter (the same one in
  all 17 modules that have it) and, where its copy gains, any other entry
  parameter only kernels read (docs/MODEL.md): v5e/mlp_s 1.095 to 1.041,
  v6e/mlp_s 1.085 to 1.049, v5p/mlp_s 1.017 to 0.994, v5e/resnet_s 1.505
  to 1.475 (its HBM bytes 34.1 to 19.3 MB against the compiled 19.4);
  within 5% 34 to 36. The weights' updates, which XLA writes into VMEM
  and copies out behind other work, tpusim now evicts the same way where
  the kernels after them hide the copy (a result's eviction,
  docs/MODEL.md), and it counts a transpose's XLU work in the benefit
  (XLA leaves mlp_s's transposed update in HBM): v5e/mlp_s 1.041 to
  1.029, v6e/decoder_s 1.053 to 1.041, v5e/resnet_s 1.470 to 1.428,
  within 5% 44 to 45; and a collective's output is evicted as a kernel's
  is (XLA keeps all-gathers' and all-reduces' results in S(1) too):
  v5e/decoder_s 1.088 to 1.080, v6e/decoder_s 1.041 to 1.037. A loop
  body's state that it only reads (the backward scan's stacks of saved
  activations and weights) is copied into VMEM at the body's top in each
  trip where that gains, a reader's gain counting the layer it reads,
  not the stack (XLA copies v6e/decoder_s_noremat's 32 MiB f32 stack in
  each trip): v5e/decoder_m 1.055 to 1.043, v6e/decoder_s_noremat 1.072
  to 1.057, v6e/decoder_m 1.121 to 1.101, v5e/decode_s 0.823 to 0.769
  (further); within 5% 45 to 46; a value the body writes stays in HBM.
  Values passed through an
  optimization barrier (remat's saved inputs and weight slices) are
  placed as the one buffer they are: v5p/decoder_s 1.065 to 1.048,
  within 5% 36 to 37. XLA also evicts a value to HBM behind other work
  once its near readers are done, and may copy it back before a far one
  (v6e/decoder_s's compiled loop body has 26 copies out, 134 MB, and 26
  in); tpusim evicts a value that does not fit whole (docs/MODEL.md): 14
  modules closer, none further, v5p/decoder_s_noremat 1.054 to 1.035,
  v6e/decoder_s 1.067 to 1.053, v5e/unet3d_s 1.193 to 1.161; within 5%
  37 to 38. Still missing: the copies back, and evicting a value that
  fits to make room (XLA evicts v6e/decoder_s's 64 MiB f32 attention
  matrix; tpusim keeps it whole). With 1.5 x the room, not a figure of
  any chip, the fused v5p/decoder_s came to 1.002 and v6e/decoder_s to
  0.978 before evictions. v5e/dlrm_s (1.69, 1.09 in HBM): XLA's
  placement takes the compiled module from 1.14 ms to 0.55, tpusim's the
  fused one from 1.18 ms to 0.91.
- Collectives beside the TensorCore on v7: XLA's v7 modules run every
  all-reduce of 8.4 MB or more as an async call on the SparseCores
  (call-start, call-done; those of 40 KB or less stay synchronous) and
  its latency-hiding scheduler puts independent kernels between start and
  done; on v2-v6e all-reduces stay synchronous. The fused modules'
  all-reduces were synchronous, next to their readers, and the compiled
  timeline hid 0.79, 0.58, 0.75 and 2.20 ms of them (mlp_m, decoder_s,
  decoder_s_noremat, decoder_m), the fused one none: v7/mlp_m 1.102,
  decoder_s 1.124, decoder_s_noremat 1.076, decoder_m 1.075, mlp_s
  1.058. Now, on a spec with xla.async_all_reduce_bytes (v7: 1 MiB),
  such an all-reduce is an async pair placed as that scheduler places it
  (sim/schedule.c: bottom up, its done right before its reader, its
  start as early as it must be to hide it, at most two in flight), and
  fuse writes it as all-reduce-start and -done: the fused timeline hides
  0.04, 0.58, 0.44, 0.47 and 1.78 ms (mlp_s, mlp_m, decoder_s,
  decoder_s_noremat, decoder_m), and all five come within 5% (0.990,
  1.026, 1.036, 0.984, 0.989); within 5% 38 to 43. A greedy list
  schedule (every start as early as its operand allows), tried by hand
  before, hid 0.38, 0.73, 0.73 and 3.3 ms and brought none within 5%.
- A scan's saved activations: XLA computes a layer's activations and
  writes each into its stack in one multi-output fusion of in-place
  updates (bitcast_dynamic-update-slice_fusion, six stacks in
  v5e/vit_s's), though the layer's dots read them first. The xla policy
  merges the updates into one kernel (merge_updates), and the update that
  saves a value now takes its producer in though a dot reads the value
  before it (sim/grouping.c loop_joins): v5e/vit_s 1.234 to 1.147, the
  no-remat decoders closer on every generation (v4 1.050 to 1.008, v5e
  1.133 to 1.086, v6e 1.165 to 1.087; v7 0.984 to 0.954, further),
  within 5% 43 to 44, fusions reproduced unchanged. What is left of
  v5e/vit_s: its all-gathers (15 kernels, 8.9 ms, against XLA's 7 and 5.7
  ms beside 3.2 ms of its collective custom-calls) and three residual adds
  written to HBM (2.2 ms) that XLA computes inside other fusions.
- Transfers in flight together: both sides are walked as a timeline
  (docs/MODEL.md), where XLA's prefetches into VMEM take turns on HBM
  (each is costed at all of its bandwidth) and the TensorCore waits once
  for transfers in flight together, not once each. The compiled decoders,
  which start several copies at once, gained 0.1-0.2 ms (v5e/decoder_s
  7.81 -> 7.95 ms, v6e/decoder_s 3.39 -> 3.51): 16 modules closer to their
  fused spmd, 3 further (v7/decoder_m 1.077 -> 1.081, v7/mlp_m 1.094 ->
  1.102, v4/mlp_s 0.970 -> 0.969), v4/decoder_s_noremat within 5%.
- Tiles in the scoped VMEM: a kernel's tiles now keep to XLA's scoped
  limit (16 MiB on v5e and v5p, 32 MiB on v6e and v7), as the compiled
  kernels' do, not all of VMEM. Compiled modules slowed by up to 2.6%,
  fused spmd ones by up to 5.6% (v5e/decoder_m 45.7 -> 46.4 ms compiled,
  49.6 -> 50.8 fused); 12 modules moved further from 1, 4 closer,
  v4/decoder_s_noremat to 1.0502, out of 5% (35 -> 34 within 5%).
- A copy with nothing beside it: tpusim costs the compiled module's
  copy-start in full when no kernel runs during it, except the
  cross-program prefetch, hidden whole beside the previous run on both
  sides (`fuse` makes it too: v5e/ops_gemm_bf16_skinny was at 0.71, its
  16.8 MB operand's copy 24 us for 10 us saved in the matmul). The
  collectives' copy of their result out of VMEM (50 us) `fuse` did not
  make (v5e/ops_all_gather and ops_all_to_all 0.89, ops_permute 0.96;
  made since, below).
- Converts of their own: the xla policy now follows XLA's kOutput fusion of
  a convolution with the batch-norm statistics of its output (output
  multi-output fusion: v5e/resnet_s's reduce kernels went from 84 to 16,
  0.04 ms, where XLA has 7; v5e/unet3d_s's from 54 to 23, 0.21 ms, against
  23), but leaves the batch-norm's normalise, relu and bf16 cast in kernels
  of their own (named for the convert at their root) where XLA computes
  them in the next kernel: v5e/resnet_s has 34 (0.05 ms) where XLA has 5,
  v5e/unet3d_s 25 (0.12 ms) against 5.
- The all-reduce combiner: XLA merges independent all-reduces into a few
  (v5e/resnet_s's 118 into 27: its batch norms' statistics in pairs and
  fours, its f32 gradients in one, its bf16 ones in another). tpusim now
  combines them before it fuses, in XLA's rounds (sim/rewrite.c), and
  keeps a combined one's elements in VMEM where they gain:
  v5e/resnet_s 118 -> 27 collectives (1.428 to 1.123), v5e/unet3d_s 14 ->
  2 (1.153 to 1.128), v5e/mlp_s 1.029 to 1.005, v6e/mlp_s 1.049 to 1.028;
  v7/decoder_s_noremat 0.9503 to 0.9499 (out of 5%, fused faster than
  compiled already); within 5% 46 to 45.
- XLA's kCustom fusions in VMEM: the gather, scatter and
  all-reduce-scatter fusions `fuse` keeps as they are held nothing in
  VMEM; XLA's read and write S(1) (v6e/decoder_s_noremat's embedding
  gather writes its 8.4 MB of rows there, its scatter reads its indices
  there). Now they hold their operands and results as other kernels do,
  and a scatter's or dynamic-update-slice's result is the buffer it
  updates in place under another name, placed with it where the update
  is that buffer's only use (dlrm_s's 1024x9x9 scatter into zeros):
  v5e/dlrm_s 1.647 to 1.323, v5e/vit_s 1.132 to 1.110,
  v5e/ops_reduce_scatter 1.029 to 0.998, the decoders 0.003-0.007
  closer (v5e/decoder_s_noremat 1.056 to 1.050, within 5%;
  v6e/decoder_s_noremat 1.058 to 1.051); within 5% 45 to 46. Left: the
  decoders' embedding gradient, 32.8 MB, its select and the scatter into
  it, which XLA places in VMEM and tpusim finds no room for (XLA
  schedules the logits' weight gradient, its all-reduce and the select
  after the backward loop, right before the scatter; the per-device
  module has them before it, and tpusim keeps that order); dlrm_s's four
  table gradients, scattered into one broadcast of zeros that XLA
  computes in each scatter fusion and the per-device module has once.
- An epilogue that reads the dot's result several times: the xla policy
  took a dot or convolution into its user's kernel (XLA's kOutput fusion)
  only where it had one user; XLA's fusions also take an epilogue that
  reads it several times (v5e/moe_s's backward: fusion.273 computes the
  GELU's gradient, the convolution's result times the six saved stacks,
  in the convolution's fusion). Now a dot whose users are all
  elementwise-like and in one kernel joins it: v5e/moe_s 1.159 to 1.098
  (add_any.147 with its convolution), v5e/vit_s 1.110 to 1.093; fusions
  reproduced 2,889 to 2,890 (v7 284 to 285), precision and recall 98.6%
  and 99.4% all told (v7 99.2% / 98.4% to 99.0% / 98.6%); within 5%
  unchanged. The analytic policy on v7/mlp_s now keeps one edge XLA
  fused apart (recall 100% to 98.8%).
- A dot with the stacks that save its epilogue: XLA fuses v5e/moe_s's
  up-projection with its GELU and the six dynamic-update-slices saving
  its parts for the backward (bitcast_dynamic-update-slice_fusion.20, its
  MXU work beside 252 MB of writes, 0.80 ms); tpusim wrote the saves in
  a kernel of their own (fusion.f35, 0.86 ms) after the convolution's
  (0.47 ms), since the six saves become one kernel only when the merges
  run, after the dot is decided. Now a dot whose users the merges put in
  one update kernel (recomputed there among others, as the GELU is in the
  down-projection) joins it after them (grouping.c merge_epilogues):
  v5e/moe_s 1.098 to 1.016, and the no-remat decoders' one such fusion
  (XLA's has one on every generation): v6e/decoder_s_noremat 1.051 to
  1.043, v5e/decoder_s_noremat 1.050 to 1.035, v7/decoder_s_noremat
  0.957 to 0.949 (now out, fused faster than compiled); fusions
  reproduced 2,890 to 2,896 (the decode steps and moe_s); within 5% 48
  to 49.
- A layer of a relaid-out stack: XLA's compiled v7 decoders copy a stack
  of saved activations into another tiling inside a nested fusion and
  take one layer of it with a dynamic-slice (v7/decoder_s_noremat's
  fusion.394). tpusim read the whole stack there; the copy's elements are
  made as the slice takes them, so it now reads the layer (cost.c and
  plan.c, sim_root_relays): the compiled v7/decoder_s_noremat 4.468 to
  4.424 ms (0.949 to 0.958, within 5%), v7/decoder_m 0.982 to 0.988,
  v7/decoder_s 1.023 to 1.024; within 5% 46 to 47. No measured set moved.
- Copies into donated buffers: the decode steps donate their KV caches,
  and the scan over the layers writes the new caches in a buffer of its
  own while it reads the old ones; XLA pairs each donated buffer with an
  output of its size (OptimizeInputOutputBufferAlias) and its copy
  insertion then copies both caches in at the end (v5e/decode_m's
  copy.83/84, 537 MB and 1.56 ms each). tpusim now pairs them as XLA does
  (XLA's 436 pairs in the 59 modules) and copies an output made in a
  buffer of its own while its parameter is still read (sim/rewrite.c), a
  kernel of its own: v5e/decode_s 0.768 to 0.957 (within 5%), decode_m
  0.622 to 0.817 (0.992 in HBM: what is left is which values go in VMEM);
  no other module copies, here or compiled; within 5% 47 to 48. `run`
  says so in a note (a cost the user can remove). (decode_m's K/V
  projections, each fused with its cache write, fusion.100/101, cost 4 us
  a step: the update moves its window, not the 67 MB slice.)
- Copies of a result other devices write: the all-gather, all-to-all and
  permute op sweeps return a copy of their collective's result, which is
  in VMEM (S(1)); the all-reduce sweep returns its result as it is. The
  other devices' DMAs write an all-gather's result into a buffer the
  compiler lays out, not into the program's result, which the runtime
  hands it; an all-reduce's result each device writes itself. tpusim now
  copies an entry result made by an all-gather, all-to-all or
  collective-permute (sim/rewrite.c; no other zoo module returns one) and
  its placement puts the collective's own buffer in VMEM as XLA's does:
  v5e/ops_all_gather and ops_all_to_all 0.892 to 1.000, ops_permute 0.956
  to 1.000; within 5% 49 to 51. `run` says so in a note.
- Async all-gathers: on v5e XLA runs an all-gather beside a convolution
  that does not need it (its async collective fusion: an
  async-collective-start, fusions holding the transfer beside a
  convolution, the done; one chain at a time). v5e/vit_s hides 2.5 ms of
  its FSDP all-gathers so (29.7 ms compiled); tpusim ran them between
  kernels (32.5 ms). Now, where the spec says so (xla.async_all_gather,
  v5e), an all-gather with a dot or convolution that neither reads nor
  feeds it is an async pair, placed by the scheduler that places v7's
  async all-reduces, one open at a time (sim/rewrite.c, sim/schedule.c);
  `fuse` writes all-gather-start and -done. Every all-gather XLA runs so
  is one (9), and 14 that XLA runs synchronously are too (dlrm_s's 11,
  vit_s's 3). v5e/vit_s 1.093 to 1.030, dlrm_s 1.323 to 1.088 (its
  async results stay in HBM: 125 to 162 MB); ops_all_gather and the
  decode steps, with no such dot, unchanged; within 5% 51 to 52.
- A divide recomputed as a transcendental: the SwiGLU's sigmoid,
  1 / (1 + exp(-x)), is evaluated in each of its readers' kernels in XLA's
  compiled decoders (five on v5e/decoder_s), where tpusim computed it once
  in a kernel of its own and wrote it with the silu and their product
  (fusion.f34, 104 us a step). A divide is one EUP function (its
  divisor's reciprocal) and a multiply, as exp is one: the grouping now
  recomputes it under the transcendentals' rule, where that reads no
  more bytes than its value (grouping.c eup_op); one that does not pay
  still joins a user kernel. v5e/decoder_s 1.059 to 1.047, decoder_m
  1.040 to 1.032, v6e/decoder_m 1.099 to 1.091, the other decoders
  within 0.008; fusions reproduced unchanged; within 5% 52 to 53.
- The decode steps' embedding table: XLA prefetches it across programs
  in both (62.5 MiB in decode_m), where tpusim passed over a parameter
  that one of XLA's kCustom gather fusions reads; with the table in
  VMEM, decode_m's 64 MiB K and V cache slices no longer fit beside it
  and stay in HBM, as XLA's do. A gather fusion's table is now a
  weight's use (placement.c); the rule picks XLA's parameter in all 17
  modules that have one. And the two cache writes, each an in-place
  update from a relayout copy, stay two kernels, as XLA keeps all 11
  such updates of the zoo (62 of its fusions hold two or more other
  updates): merge_updates joins no update written from a copy that
  permutes its layout. v5e/decode_m 0.817 to 0.988, decode_s 0.954 to
  0.988 (0.945 with the prefetch alone); within 5% 53 to 54.
- The decoders (0.98-1.17; 0.98-1.10 in HBM): on v4 and later XLA
  rewrites an attention's row max, a reduce broadcast back over the row, as
  a reduce-window over the whole row and computes it in the scores'
  convolution with the subtract, exp and sum (v5e/decoder_s's fusion.373
  and fusion.414); the per-device module XLA's fusion receives has the
  reduce and the broadcast. tpusim now rewrites it the same way before it
  fuses (sim/rewrite.c, where the spec's xla.row_max_window says so: v4
  and later), which took the v4-and-later decoders from 1.07-1.28 to
  1.02-1.20 and three more modules within 5% (v4/decoder_s, v4/decoder_m,
  v5p/decoder_m). Over the scores (v5e/decoder_s, kernels with a
  4x4x1024x1024 result) the fused module takes 0.36 ms in 5 kernels
  against 0.35 ms in 4, since placement orders values by XLA's memory
  boundedness (docs/MODEL.md "Memory-space assignment"): the 64 MiB exp
  goes in VMEM, as XLA's does, and the softmax's divide and backward read
  35 MB, as XLA's. Before, the order (readers per kernel spanned) left the
  exp in HBM: 0.87 ms, the divide and backward reading 67 MB each. Over
  the whole module the gain is smaller (9.36 -> 9.22 ms), as the exp takes
  room other values had. Beside them the optimizer's update
  and the norms' backward stay in more kernels: 53 subtract, add,
  multiply, divide and reduce kernels (1.73 ms) against 24 (0.91 ms).
  (v4/decoder_m was at 0.80 from the compiled side: its softmax fusions
  hold the scores' QK^T as a nested convolution, whose operands the plan
  did not follow and relaid out whole, 2.06 ms each against a roofline of
  0.28 ms; the plan now maps a nested convolution's batch and feature
  dims to its operands, 0.30 ms, and the module is at 1.08.)
"""


def spmd_section(tpusim: str, zoo: pathlib.Path, gens: list[str]) -> None:
    print("\n## The compiled module against `fuse` of XLA's per-device "
          "module, worst first\n")
    print("For each module, tpusim's program time of the compiled module "
          "(`run NAME.tpu.hlo`)\nbeside that of NAME.spmd.hlo, the module "
          "XLA's first fusion pass (tpu_fusion)\nreceives: after SPMD "
          "partitioning and layout assignment, one device's program;\n"
          "fused by `tpusim fuse --hw` (xla policy; XLA's kCustom fusions "
          "already in it,\ngather, scatter and all-reduce-scatter, kept as "
          "they are), then `run`, same\nspec: "
          "XLA's fusion, then its memory-space\nassignment (S(1) in the "
          "compiled layouts) against tpusim's (docs/MODEL.md\n"
          "\"Memory-space assignment\"). Ratio = fused spmd / compiled; in "
          "HBM: the same with\nevery buffer in HBM (the compiled module's "
          "S(n) dropped, the spmd module fused\nand run with no room for "
          "placement: `--set vmem.bytes=` the scoped limit),\nfusion alone; "
          "also the kernels, HBM bytes and collective time (compiled /\n"
          "fused spmd).\n")
    table = []
    with tempfile.TemporaryDirectory() as tmp:
        for gen in gens:
            for spmd in sorted((zoo / gen).glob("*.spmd.hlo")):
                name = spmd.name[:-len(".spmd.hlo")]
                compiled = spmd.with_name(f"{name}.tpu.hlo")
                tpu = run(tpusim, gen, compiled)
                hbm = run(tpusim, gen, in_hbm(compiled, pathlib.Path(tmp)))
                ours = fused(tpusim, gen, spmd, pathlib.Path(tmp))
                ours_hbm = fused(tpusim, gen, spmd, pathlib.Path(tmp),
                                 *no_placement(gen))
                r = ratio(ours["total"]["time_ns"], tpu["total"]["time_ns"])
                rh = ratio(ours_hbm["total"]["time_ns"], hbm["total"]["time_ns"])
                table.append((abs(r - 1), f"{gen}/{name}", r, rh, tpu, ours))
    if not table:
        print("No NAME.spmd.hlo in the zoo.")
        return
    within = sum(1 for t in table if t[0] <= 0.05)
    near_hbm = sum(1 for t in table if abs(t[3] - 1) <= 0.05)
    print(f"Within 5%: {within} of {len(table)} modules "
          f"({100 * within / len(table):.0f}%); both in HBM (fusion "
          f"alone): {near_hbm} ({100 * near_hbm / len(table):.0f}%).\n")
    print("| module | compiled | fused spmd | ratio | ratio in HBM "
          "| kernels | HBM bytes | collective time |\n"
          "|---|---|---|---|---|---|---|---|")
    for _, name, r, rh, tpu, ours in sorted(table, key=lambda t: -t[0]):
        print(f"| {name} | {tpu['total']['time_ns'] / 1e6:.3f} ms | "
              f"{ours['total']['time_ns'] / 1e6:.3f} ms | {r:.3f} | {rh:.3f} | "
              f"{tpu['n_kernels']} / {ours['n_kernels']} | "
              f"{hbm_bytes(tpu) / 1e6:.3g} / {hbm_bytes(ours) / 1e6:.3g} MB | "
              f"{collective_ns(tpu) / 1e6:.3g} / {collective_ns(ours) / 1e6:.3g} ms |")
    if CAUSES.strip():
        print("\nWhy the worst disagree (kernel by kernel):\n")
        print(CAUSES, end="")


if __name__ == "__main__":
    main()
