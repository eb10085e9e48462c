"""MSCCL XML out: an `algo.algorithm` as the file the MSCCL runtime loads.

Every attribute the runtime reads is written (it rejects files without `outofplace`, `minBytes`
and `maxBytes`); a step without a source or destination gets MSCCL's `i`/`o` with offset -1, and
`hasdep="1"` marks the steps others wait for. Reading the output back gives the same IR.
"""

from __future__ import annotations

from xml.sax.saxutils import quoteattr

import numpy as np

from ccopt.dialects.algo import (
    BUFFERS,
    DEPID,
    DEPS,
    MSCCL_STEP_NAMES,
    TYPE,
    Algorithm,
    AlgorithmError,
    Step,
)

STEP = (
    '      <step s="%d" type="%s" srcbuf="%s" srcoff="%d" dstbuf="%s" dstoff="%d" cnt="%d" '
    'depid="%d" deps="%d" hasdep="%d"/>'
)


TYPE_NAMES = np.array(MSCCL_STEP_NAMES, dtype=object)
SRC_NAMES = np.array(("i", *BUFFERS), dtype=object)  # index buffer + 1: none is written "i"
DST_NAMES = np.array(("o", *BUFFERS), dtype=object)  # and "o", with offset -1, as MSCCL does


def step_lines(steps: np.ndarray, marked: np.ndarray) -> map[str]:
    """The <step> lines of a thread block, formatted column-wise (no Python loop per step)."""
    columns = steps.T
    return map(
        STEP.__mod__,
        zip(
            range(len(steps)),
            TYPE_NAMES[columns[0]].tolist(),
            SRC_NAMES[columns[1] + 1].tolist(),
            columns[2].tolist(),
            DST_NAMES[columns[3] + 1].tolist(),
            columns[4].tolist(),
            columns[5].tolist(),
            columns[6].tolist(),
            columns[7].tolist(),
            marked.astype(int).tolist(),
            strict=True,
        ),
    )


MAX_STEPS = 256
"""Steps per thread block the MSCCL runtime (microsoft/msccl, MSCCL_MAX_NUM_STEPS) takes."""
MAX_TBS_PER_CHANNEL = 32
"""Thread blocks per channel per rank it takes (MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL)."""


def runtime_limits(alg: Algorithm) -> list[str]:
    """Where an algorithm exceeds the MSCCL runtime's compile-time limits (its file is still
    valid MSCCL XML, but that runtime build refuses to load it)."""
    problems = []
    longest = max(
        ((len(tb.steps), r, t) for r, g in enumerate(alg.gpus) for t, tb in enumerate(g.tbs)),
        default=None,
    )
    if longest is not None and longest[0] > MAX_STEPS:
        problems.append(
            f"rank {longest[1]} tb {longest[2]} has {longest[0]} steps; the MSCCL runtime takes "
            f"at most {MAX_STEPS} per thread block"
        )
    for r, g in enumerate(alg.gpus):
        per_channel = np.bincount([tb.chan for tb in g.tbs], minlength=1)
        if per_channel.max() > MAX_TBS_PER_CHANNEL:
            problems.append(
                f"rank {r} has {int(per_channel.max())} thread blocks on channel "
                f"{int(per_channel.argmax())}; the MSCCL runtime takes at most "
                f"{MAX_TBS_PER_CHANNEL} per channel"
            )
            break
    return problems


def refuse_fused_body(alg: Algorithm) -> None:
    """MSCCL has no step that runs a computation: an `fn` step (a fused all-reduce's body) is
    refused where it is, rather than dropped (the file would compute another thing)."""
    for r, g in enumerate(alg.gpus):
        for t, tb in enumerate(g.tbs):
            hit = np.flatnonzero(tb.steps[:, TYPE] == Step.APPLY)
            if hit.size:
                raise AlgorithmError(
                    "applies a fused body, which MSCCL XML cannot express (no step type runs a "
                    "computation); export the plain algorithm it was made from",
                    r,
                    t,
                    int(hit[0]),
                    Step.APPLY,
                )


def write_xml(alg: Algorithm) -> str:
    """The algorithm as MSCCL XML text (AlgorithmError for ccopt's own `fn` steps)."""
    refuse_fused_body(alg)
    lines = [
        f'<algo name={quoteattr(alg.name)} proto="{alg.proto}" nchannels="{alg.nchannels}" '
        f'nchunksperloop="{alg.chunks_per_loop}" ngpus="{alg.ranks}" coll="{alg.collective}" '
        f'inplace="{int(alg.inplace)}" outofplace="{int(alg.outofplace)}" '
        f'minBytes="{alg.min_bytes}" maxBytes="{alg.max_bytes}"'
        + (f' root="{alg.root}"' if alg.collective in ("broadcast", "reduce") else "")
        + ">"
    ]
    for r, gpu in enumerate(alg.gpus):
        lines.append(
            f'  <gpu id="{r}" i_chunks="{gpu.in_chunks}" o_chunks="{gpu.out_chunks}" '
            f's_chunks="{gpu.scratch_chunks}">'
        )
        marks = [np.zeros(len(tb.steps), dtype=bool) for tb in gpu.tbs]
        for tb in gpu.tbs:
            for t, s in tb.steps[tb.steps[:, DEPID] >= 0][:, [DEPID, DEPS]].tolist():
                marks[t][s] = True
        for t, tb in enumerate(gpu.tbs):
            lines.append(f'    <tb id="{t}" send="{tb.send}" recv="{tb.recv}" chan="{tb.chan}">')
            lines.extend(step_lines(tb.steps, marks[t]))
            lines.append("    </tb>")
        lines.append("  </gpu>")
    lines.append("</algo>\n")
    return "\n".join(lines)
