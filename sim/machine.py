"""ccopt's machine description: ASTRA-sim's network plus what a compiler needs of each GPU.

A machine file is YAML. Its `network:` section is an ASTRA-sim network file as it is (`topology`,
`npus_count`, `bandwidth` in GB/s with GB = 2^30, `latency` in ns, one entry per dimension,
dimension 0 innermost), read by `ccopt.sim.network`; the rest is ccopt's:

```yaml
network: {topology: [Switch, Switch], npus_count: [8, 4], bandwidth: [279.4, 23.28], latency: [500, 2000]}
gpu:
  peak-tflops: {f16: 312, bf16: 312, tf32: 156, f32: 19.5}  # dense, per GPU, by element type
                                                  # (tf32: f32 gemms allowed tensor cores)
  hbm-tbps: 2.0                                   # device memory bandwidth (TB/s, 1e12)
  memory-gb: 80                                   # device memory (GB, 1e9; optional)
  launch-overhead-ns: 3000                        # host time to issue one kernel or NCCL call
  collective-sm-share: 0.15                       # share of SMs a running collective takes
  matmul-efficiency: [[64, 0.04], [8192, 0.8]]    # [geometric mean of m, n, k; share of peak]
  misaligned-matmul: {bf16: 0.15, tf32: 0.33}     # share kept when rows are off 16 bytes
nic-sharing: [1, 1]        # GPUs sharing one link (NIC) of each dimension when all communicate
collective-algorithm: [ring, ring]   # NCCL's choice per dimension unless an op names one
mesh-axes: innermost       # or axis names, innermost first: how mesh ranks sit on the network
```

Presets (`dgx2-v100`, `dgx-a100`, `dgx-h100`, `perlmutter`, `frontier`) live in
`ccopt/sim/machines/`; their figures come from vendor datasheets (see each file).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import TYPE_CHECKING, Any

from ccopt.diagnostics import CcoptError
from ccopt.files import is_stdin, read_text

if TYPE_CHECKING:
    from ccopt.mesh import Mesh
    from ccopt.sim.network import Network

PRESETS = ("dgx2-v100", "dgx-a100", "dgx-h100", "perlmutter", "frontier")
ALGORITHMS = ("ring", "tree", "direct", "halving_doubling", "hierarchical")
KNOWN_KEYS = {"name", "description", "network", "gpu", "nic-sharing", "collective-algorithm",
              "mesh-axes", "grow-outermost"}  # fmt: skip
GPU_KEYS = {"name", "peak-tflops", "hbm-tbps", "launch-overhead-ns", "collective-sm-share",
            "matmul-efficiency", "misaligned-matmul", "memory-gb"}  # fmt: skip
ELEMENT_TYPES = ("f16", "bf16", "tf32", "f32", "f64", "i1", "i8", "i32", "i64")


class MachineError(CcoptError):
    """A machine file that cannot be used: `FILE: error: key 'k': message`, as ASTRA-sim's
    network and system files report theirs."""

    def __init__(self, source: str, message: str):
        super().__init__(f"{source}: error: {message}")
        self.source = source

    def render(self, source: object = None) -> str:
        return str(self)


@dataclass(frozen=True)
class Gpu:
    """Per-GPU figures for the compute roofline."""

    name: str
    peak_flops: Mapping[str, float]  # element type -> FLOP/s
    hbm_bytes_per_ns: float
    launch_ns: float
    collective_sm_share: float
    matmul_efficiency: tuple[tuple[float, float], ...]  # (geometric-mean dimension, share)
    misaligned_share: Mapping[str, float] = field(default_factory=dict)  # element type -> share
    memory_bytes: float = 0.0  # device memory (0: not given)

    def peak(self, element: str) -> float:
        """Peak FLOP/s for an element type; integer and unknown types run at the f32 rate, and
        so does tf32 on a GPU without it (cuBLAS then computes in f32)."""
        return self.peak_flops.get(element) or self.peak_flops["f32"]

    def efficiency(self, m: int, n: int, k: int) -> float:
        """The share of peak a matmul of this shape reaches: the table, interpolated on the
        logarithm of the shape's geometric mean and clamped at both ends (small matmuls leave
        SMs idle and pay tile quantization; large ones approach the calibrated ceiling)."""
        size = max(1.0, m * n * k) ** (1 / 3)
        table = self.matmul_efficiency
        if size <= table[0][0]:
            return table[0][1]
        for (s0, e0), (s1, e1) in zip(table, table[1:], strict=False):
            if size <= s1:
                t = (math.log(size) - math.log(s0)) / (math.log(s1) - math.log(s0))
                return e0 + t * (e1 - e0)
        return table[-1][1]

    def misaligned(self, element: str) -> float:
        """The share of its rate a matmul of this element type keeps when an operand's rows or
        start are off 16-byte boundaries (tensor-core kernels need them; 1 where the file
        gives no figure)."""
        return self.misaligned_share.get(element, 1.0)


@dataclass(frozen=True)
class Machine:
    """A network (ASTRA-sim's dimensions) and the GPU at each of its endpoints."""

    name: str
    network: Network
    gpu: Gpu
    nic_sharing: tuple[int, ...]
    algorithms: tuple[str, ...]
    mesh_axes: tuple[str, ...] | None = None  # innermost first; None: the mesh's own order
    grow_outermost: bool = True
    source: str = "<machine>"
    description: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def dims(self) -> Sequence[Any]:
        return self.network.dims

    def with_gpu(self, **changes: Any) -> Machine:
        """The same machine with some GPU figures changed (for sensitivity studies and tests)."""
        return replace(self, gpu=replace(self.gpu, **changes))

    def with_bandwidth_scale(self, factor: float) -> Machine:
        """The same machine with every network dimension's bandwidth multiplied by `factor`."""
        from ccopt.sim.network import Network, NetworkDim

        dims = [
            NetworkDim(d.topology, d.npus, d.bandwidth_gbps * factor, d.latency_ns)
            for d in self.network.dims
        ]
        return replace(self, network=Network(tuple(dims)))

    def fit(self, ranks: int) -> Machine:
        """The machine for a job of `ranks` GPUs: the outermost dimension (nodes) grows when
        the job needs more nodes than the file lists; a job that still does not fit is an error."""
        from ccopt.sim.network import Network, NetworkDim

        if ranks <= self.network.npus:
            return self
        inner = math.prod(d.npus for d in self.network.dims[:-1])
        last = self.network.dims[-1]
        if not self.grow_outermost or ranks % inner:
            raise MachineError(
                self.source,
                f"the job has {ranks} ranks but the network has "
                f"{self.network.npus} NPUs"
                + (
                    ""
                    if not self.grow_outermost
                    else f" (and {ranks} is not a multiple of {inner})"
                ),
            )
        grown = NetworkDim(last.topology, ranks // inner, last.bandwidth_gbps, last.latency_ns)
        return replace(self, network=Network((*self.network.dims[:-1], grown)))

    def axis_strides(self, mesh: Mesh) -> dict[int, int]:
        """Where each mesh axis sits on the network: its stride in network rank order
        (dimension 0 fastest). By default the innermost (last) mesh axis is fastest, which is
        the mesh's own row-major rank numbering."""
        order = self.mesh_axes
        names = list(mesh.axis_names)
        if order is None:
            order = tuple(reversed(names))
        missing = [n for n in names if n not in order]
        unknown = [n for n in order if n not in names]
        if missing or unknown:
            raise MachineError(
                self.source,
                f"key 'mesh-axes' lists {list(order)} but the mesh has axes "
                f"{names}" + (f" (missing {missing})" if missing else ""),
            )
        strides, stride = {}, 1
        for n in order:
            a = mesh.axis_index(n)
            strides[a] = stride
            stride *= mesh.axis_sizes[a]
        return strides

    def span(self, mesh: Mesh, axes: Sequence[int]) -> tuple[int, ...]:
        """How many distinct coordinates a group over mesh `axes` takes in each network
        dimension (1 where it stays put): the group's shape on the network (the largest of
        every group's, where groups sit differently: `is_grid`)."""
        return self._shape(mesh, tuple(axes))[0]

    def is_grid(self, mesh: Mesh, axes: Sequence[int]) -> bool:
        """Whether every group over mesh `axes` is the same full grid on the network: as many
        ranks as its span's product (9 ranks on nodes of 8 are 8 + 1, not an 8 x 2 grid; 6
        ranks from the seventh GPU take 2 + 4 of two nodes)."""
        return self._shape(mesh, tuple(axes))[1]

    def _shape(self, mesh: Mesh, axes: tuple[int, ...]) -> tuple[tuple[int, ...], bool]:
        strides = self.axis_strides(mesh)
        npus = tuple(d.npus for d in self.network.dims)
        key = (tuple(sorted(strides.items())), tuple(mesh.axis_sizes), axes, npus)
        known = _SHAPES.get(key)
        if known is None:
            if len(_SHAPES) > 1024:
                _SHAPES.clear()
            known = _SHAPES[key] = _group_shape(strides, mesh, axes, npus)
        return known


_SHAPES: dict[tuple, tuple[tuple[int, ...], bool]] = {}
"""`Machine._shape` by the rank layout it depends on (every group is walked: O(ranks))."""


def _group_shape(
    strides: Mapping[int, int], mesh: Mesh, axes: tuple[int, ...], npus: tuple[int, ...]
) -> tuple[tuple[int, ...], bool]:
    """The largest span of the groups over `axes` and whether they are all that full grid."""
    offsets = [0]
    for a in axes:
        offsets = [o + c * strides[a] for o in offsets for c in range(mesh.axis_sizes[a])]
    bases = [0]
    for a in range(len(mesh.axis_sizes)):
        if a not in axes:
            bases = [b + c * strides[a] for b in bases for c in range(mesh.axis_sizes[a])]
    largest = [1] * len(npus)
    shapes = set()
    for base in bases:
        ranks = [base + o for o in offsets]
        shape, radix = [], 1
        for size in npus:
            shape.append(len({(r // radix) % size for r in ranks}))
            radix *= size
        shapes.add(tuple(shape))
        largest = [max(x, y) for x, y in zip(largest, shape, strict=True)]
    grid = len(shapes) == 1 and math.prod(largest) == len(offsets)
    return tuple(largest), grid


def load_machine(preset_or_path: str | os.PathLike[str]) -> Machine:
    """A machine from a preset name or a YAML file; errors name the file and the key."""
    text, source = _machine_text(preset_or_path)
    import yaml

    from ccopt.sim.network import load_yaml

    try:
        data = load_yaml(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e)
        raise MachineError(f"{source}{where}", f"not valid YAML: {problem}") from None
    return machine_from_dict(data, source)


def _machine_text(preset_or_path: str | os.PathLike[str]) -> tuple[str, str]:
    name = os.fspath(preset_or_path)
    if name in PRESETS:
        path = resources.files("ccopt.sim") / "machines" / f"{name}.yml"
        return path.read_text(), name
    if is_stdin(name):
        return read_text(None), "<stdin>"
    try:
        with open(name, encoding="utf-8") as f:
            return f.read(), name
    except FileNotFoundError:
        raise MachineError(
            name, f"no such machine file or preset (presets: {', '.join(PRESETS)})"
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise MachineError(name, f"cannot read the machine file: {e}") from None


def machine_from_dict(data: Any, source: str) -> Machine:
    """Check and convert a parsed machine file."""
    from ccopt.sim.network import network_from_dict

    if not isinstance(data, dict):
        raise MachineError(source, "a machine file is a mapping with 'network' and 'gpu' keys")
    for key in ("network", "gpu"):
        if key not in data:
            raise MachineError(source, f"missing key '{key}'")
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        raise MachineError(source, f"unknown key '{unknown[0]}' (keys: {sorted(KNOWN_KEYS)})")
    network = network_from_dict(data["network"], f"{source}: network")
    ndims = len(network.dims)
    gpu = _gpu(data["gpu"], source)
    nic = _per_dim(data, "nic-sharing", ndims, 1, source)
    if any(not isinstance(n, int) or isinstance(n, bool) or n < 1 for n in nic):
        raise MachineError(source, "key 'nic-sharing': GPUs per link must be integers >= 1")
    algorithms = _per_dim(data, "collective-algorithm", ndims, "ring", source)
    for a in algorithms:
        if a not in ALGORITHMS:
            raise MachineError(
                source,
                f"key 'collective-algorithm': unknown algorithm '{a}' "
                f"(known: {', '.join(ALGORITHMS)})",
            )
    axes = data.get("mesh-axes", "innermost")
    if axes == "innermost":
        mesh_axes = None
    elif isinstance(axes, list) and all(isinstance(a, str) for a in axes):
        mesh_axes = tuple(axes)
    else:
        raise MachineError(source, "key 'mesh-axes': 'innermost' or a list of mesh axis names")
    grow = data.get("grow-outermost", True)
    if not isinstance(grow, bool):
        raise MachineError(source, f"key 'grow-outermost': true or false, got {grow!r}")
    return Machine(
        name=str(data.get("name", os.path.splitext(os.path.basename(source))[0])),
        network=network,
        gpu=gpu,
        nic_sharing=tuple(nic),
        algorithms=tuple(algorithms),
        mesh_axes=mesh_axes,
        grow_outermost=grow,
        source=source,
        description=str(data.get("description", "")),
    )


def _per_dim(data: dict, key: str, ndims: int, default: Any, source: str) -> list[Any]:
    value = data.get(key, [default] * ndims)
    if not isinstance(value, list):
        value = [value] * ndims
    if len(value) != ndims:
        raise MachineError(
            source, f"key '{key}': {len(value)} entries for {ndims} network dimensions"
        )
    return value


def _number(gpu: dict, key: str, source: str, low: float = 0.0, high: float = math.inf) -> float:
    if key not in gpu:
        raise MachineError(source, f"missing key 'gpu.{key}'")
    value = gpu[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        bounds = f">= {low}" if high == math.inf else f"in [{low}, {high}]"
        raise MachineError(source, f"key 'gpu.{key}': a number {bounds}, got {value!r}")
    return float(value)


def _gpu(gpu: Any, source: str) -> Gpu:
    if not isinstance(gpu, dict):
        raise MachineError(source, "key 'gpu': a mapping of GPU figures")
    unknown = sorted(set(gpu) - GPU_KEYS)
    if unknown:
        raise MachineError(source, f"unknown key 'gpu.{unknown[0]}' (keys: {sorted(GPU_KEYS)})")
    peaks = gpu.get("peak-tflops")
    if not isinstance(peaks, dict) or "f32" not in peaks:
        raise MachineError(
            source, "key 'gpu.peak-tflops': a mapping of element type to TFLOP/s with 'f32'"
        )
    peak_flops = {}
    for element, tflops in peaks.items():
        if element not in ELEMENT_TYPES:
            raise MachineError(
                source,
                f"key 'gpu.peak-tflops.{element}': unknown element type "
                f"(known: {', '.join(ELEMENT_TYPES)})",
            )
        if isinstance(tflops, bool) or not isinstance(tflops, int | float) or tflops <= 0:
            raise MachineError(source, f"key 'gpu.peak-tflops.{element}': a positive number")
        peak_flops[element] = float(tflops) * 1e12
    hbm = _number(gpu, "hbm-tbps", source)
    if hbm <= 0:
        raise MachineError(source, f"key 'gpu.hbm-tbps': a positive number, got {hbm}")
    return Gpu(
        name=str(gpu.get("name", "GPU")),
        peak_flops=peak_flops,
        hbm_bytes_per_ns=hbm * 1e12 / 1e9,
        launch_ns=_number(gpu, "launch-overhead-ns", source),
        collective_sm_share=_number(gpu, "collective-sm-share", source, 0.0, 0.95),
        matmul_efficiency=_efficiency_table(gpu.get("matmul-efficiency"), source),
        misaligned_share=_shares(gpu.get("misaligned-matmul", {}), source),
        memory_bytes=_memory(gpu, source),
    )


def _memory(gpu: dict, source: str) -> float:
    """Device memory in bytes from `memory-gb` (GB = 1e9, as datasheets give it); 0 without."""
    if "memory-gb" not in gpu:
        return 0.0
    gb = gpu["memory-gb"]
    if isinstance(gb, bool) or not isinstance(gb, int | float) or not 0 < gb < float("inf"):
        raise MachineError(source, f"key 'gpu.memory-gb': a positive number, got {gb!r}")
    return float(gb) * 1e9


def _shares(shares: Any, source: str) -> dict[str, float]:
    key = "key 'gpu.misaligned-matmul'"
    if not isinstance(shares, dict):
        raise MachineError(source, f"{key}: a mapping of element type to a share in (0, 1]")
    for element, share in shares.items():
        if element not in ELEMENT_TYPES:
            raise MachineError(
                source,
                f"{key}: unknown element type '{element}' (known: {', '.join(ELEMENT_TYPES)})",
            )
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
            raise MachineError(source, f"{key}: '{element}' needs a share in (0, 1], got {share!r}")
    return {e: float(v) for e, v in shares.items()}


def _efficiency_table(table: Any, source: str) -> tuple[tuple[float, float], ...]:
    key = "key 'gpu.matmul-efficiency'"
    if not isinstance(table, list) or not table:
        raise MachineError(source, f"{key}: a list of [size, share of peak] rows")
    rows = []
    for row in table:
        ok = isinstance(row, list) and len(row) == 2
        ok = ok and all(isinstance(v, int | float) and not isinstance(v, bool) for v in row)
        if not ok or not (row[0] >= 1 and 0 < row[1] <= 1):
            raise MachineError(source, f"{key}: row {row!r} must be [size >= 1, share in (0, 1]]")
        rows.append((float(row[0]), float(row[1])))
    if [r[0] for r in rows] != sorted({r[0] for r in rows}):
        raise MachineError(source, f"{key}: sizes must increase")
    return tuple(rows)


def calibrate_matmul(
    measurements: Sequence[tuple[int, int, int, float]], peak_flops: float
) -> list[list[float]]:
    """A `matmul-efficiency` table from measured matmuls `(m, n, k, seconds)`: the share of
    `peak_flops` each reached, by geometric-mean size (the best one where sizes repeat)."""
    best: dict[float, float] = {}
    for m, n, k, seconds in measurements:
        size = round((m * n * k) ** (1 / 3), 3)
        share = min(1.0, 2 * m * n * k / seconds / peak_flops)
        best[size] = max(best.get(size, 0.0), share)
    return [[s, round(best[s], 4)] for s in sorted(best)]
