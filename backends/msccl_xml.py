"""MSCCL XML out: an `algo.algorithm` as the file the MSCCL runtime loads.

Every attribute the runtime reads is written (it rejects files without `outofplace`, `minBytes`
and `maxBytes`); a step without a source or destination gets MSCCL's `i`/`o` with offset -1, and
`hasdep="1"` marks the steps others wait for. Reading the output back gives the same IR.
"""

from __future__ import annotations

from xml.sax.saxutils import quoteattr

import numpy as np

from ccopt.dialects.algo import BUFFERS, DEPID, DEPS, STEP_NAMES, Algorithm

STEP = (
    '      <step s="%d" type="%s" srcbuf="%s" srcoff="%d" dstbuf="%s" dstoff="%d" cnt="%d" '
    'depid="%d" deps="%d" hasdep="%d"/>'
)


TYPE_NAMES = np.array(STEP_NAMES, dtype=object)
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


def write_xml(alg: Algorithm) -> str:
    """The algorithm as MSCCL XML text."""
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
