"""Clusters: groups of identical GPU nodes, from datasheet presets, a spec string or a JSON file.

Stable API (the fusion app builds on it):

- ``load_cluster(spec) -> Cluster``: ``spec`` is ``PRESET:NODESxGPUS`` groups joined by ``+``
  (``dgx-a100-80g:4x8+dgx-v100-32g:4x8``; ``PRESET`` alone is one node) or a JSON file path.
- ``Cluster.groups``: list of :class:`DeviceGroup` with ``nodes``, ``gpus_per_node``, ``gpus``,
  ``memory`` (bytes per GPU), ``peak_flops`` (FLOP/s per GPU, dense 16-bit), ``hbm_bandwidth``,
  ``intra_bandwidth``/``inter_bandwidth`` (bytes/s per GPU, one direction: NVLink inside a node,
  the NIC share between nodes) and ``intra_latency``/``inter_latency`` (seconds).
- ``Cluster.intra_bandwidth``, ``inter_bandwidth`` (the slowest group's), ``intra_latency``,
  ``inter_latency`` (the largest), ``gpus``; ``Cluster.link(a, b)`` the inter-node bandwidth and
  latency between two groups (the slower side).

JSON form (units: GiB, TFLOP/s, GB/s = 1e9 bytes/s, microseconds; a group may name a ``preset``
and override fields)::

    {"groups": [{"preset": "dgx-a100-80g", "nodes": 4},
                {"name": "v100", "nodes": 2, "gpus_per_node": 8, "memory_gib": 32, "peak_tflops": 125,
                 "hbm_gbps": 900, "intra_gbps": 150, "inter_gbps": 12.5,
                 "intra_latency_us": 5, "inter_latency_us": 15, "bf16": false}]}

``bf16`` (default: the preset's, else true) says whether the GPUs compute in bfloat16: V100s and
Turing cards do not, and the planner then trains and launches in fp16.

Sites (FusionLLM's geo-distributed clusters): a group may name its ``"site"``, and a top-level
``"links"`` list joins every pair of sites the groups name, in megabits per second for the whole link
and milliseconds: ``"links": [{"sites": ["hk", "sz"], "mbps": 100, "latency_ms": 10}]``
(``Cluster.wan``, ``Cluster.sites``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from yewpy.apps.dnn import jsonfile
from yewpy.errors import InputError, UsageError

__all__ = ["Cluster", "DeviceGroup", "PRESETS", "load_cluster", "parse_spec", "read_cluster"]

GIB = 2**30


@dataclass(frozen=True)
class DeviceGroup:
    """``nodes`` identical nodes of ``gpus_per_node`` GPUs each."""

    name: str
    nodes: int
    gpus_per_node: int
    memory: float           # bytes per GPU
    peak_flops: float       # FLOP/s per GPU (dense bf16/fp16)
    hbm_bandwidth: float    # bytes/s per GPU
    intra_bandwidth: float  # bytes/s per GPU per direction inside a node
    inter_bandwidth: float  # bytes/s per GPU per direction between nodes (NIC share)
    intra_latency: float    # seconds per message inside a node
    inter_latency: float    # seconds per message between nodes
    bf16: bool = True       # computes in bfloat16 (compute capability 8.0 and later; V100s do not)
    site: str = ""          # its data centre ("": the one site); sites meet over wide-area links
    #: a planner's pairing of two groups' nodes (HAP's uneven tensor-parallel shares): each GPU kind's
    #: name and the share of every tensor-parallel group's work its half takes; () for real nodes
    tp_shares: tuple = ()

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def busier_share(self) -> float:
        """How many times an even share of each layer's parameters the busier GPUs of a paired
        group hold, and so send in its data-parallel rings: 2 max(x, 1 - x); 1 for real nodes."""
        return 2 * max(x for _, x in self.tp_shares) if self.tp_shares else 1.0


def _preset(name: str, g: int, mem_gib: float, tflops: float, hbm: float, nvlink: float, nic: float,
            intra_us: float = 5.0, inter_us: float = 15.0, bf16: bool = True) -> DeviceGroup:
    return DeviceGroup(name, 1, g, mem_gib * GIB, tflops * 1e12, hbm * 1e9, nvlink * 1e9, nic * 1e9,
                       intra_us * 1e-6, inter_us * 1e-6, bf16)


# Datasheet values (dense 16-bit peak, NVLink per direction, one NIC per GPU unless noted).
PRESETS = {p.name: p for p in (
    _preset("dgx-a100-80g", 8, 80, 312, 2039, 300, 25),
    _preset("dgx-a100-40g", 8, 40, 312, 1555, 300, 25),
    _preset("dgx-h100-80g", 8, 80, 989, 3350, 450, 50),
    _preset("dgx-v100-32g", 8, 32, 125, 900, 150, 12.5, bf16=False),
    _preset("dgx-v100-16g", 8, 16, 125, 900, 150, 12.5, bf16=False),
    _preset("p3.16xlarge", 8, 16, 125, 900, 150, 25 / 8 / 8, bf16=False),   # 25 Gb/s per node
    _preset("rtx-titan-24g", 8, 24, 130, 672, 16, 12.5 / 8, bf16=False),     # PCIe box, 100 Gb/s per node
)}


@dataclass
class Cluster:
    """Device groups; between groups of one site the slower side's NIC share and latency apply,
    between sites their wide-area link (``links``: a frozenset of the two site names -> (bytes/s
    for the whole link, seconds))."""

    groups: list[DeviceGroup]
    links: dict = field(default_factory=dict)

    @property
    def gpus(self) -> int:
        return sum(g.gpus for g in self.groups)

    @property
    def intra_bandwidth(self) -> float:
        return min(g.intra_bandwidth for g in self.groups)

    @property
    def inter_bandwidth(self) -> float:
        return min(g.inter_bandwidth for g in self.groups)

    @property
    def intra_latency(self) -> float:
        return max(g.intra_latency for g in self.groups)

    @property
    def inter_latency(self) -> float:
        return max(g.inter_latency for g in self.groups)

    def scaled(self, intra: float = 1.0, inter: float = 1.0) -> Cluster:
        """This cluster with every group's in-node and inter-node bandwidth multiplied by ``intra`` and
        ``inter`` (the planner's sensitivity sweep and Ada-Grouper's network slowdowns)."""
        return Cluster([replace(g, intra_bandwidth=g.intra_bandwidth * intra,
                                inter_bandwidth=g.inter_bandwidth * inter) for g in self.groups],
                       {sites: (bw * inter, lat) for sites, (bw, lat) in self.links.items()})

    def link(self, a: DeviceGroup, b: DeviceGroup) -> tuple[float, float]:
        """Inter-node (bandwidth, latency) between a GPU of ``a`` and one of ``b`` of the same site."""
        return min(a.inter_bandwidth, b.inter_bandwidth), max(a.inter_latency, b.inter_latency)

    def wan(self, a: DeviceGroup, b: DeviceGroup) -> tuple[float, float] | None:
        """The wide-area link (bytes/s for the whole link, latency) between the sites of ``a`` and
        ``b``, or None when they share a site."""
        return None if a.site == b.site else self.links[frozenset((a.site, b.site))]

    @property
    def sites(self) -> list[str]:
        """The sites, in the order their first groups appear."""
        return list(dict.fromkeys(g.site for g in self.groups))

    def describe(self) -> str:
        return "+".join(f"{g.name}:{g.nodes}x{g.gpus_per_node}" for g in self.groups)


_SPEC = re.compile(r"^([A-Za-z0-9_.\-]+?)(?::([0-9]+)x([0-9]+))?$")    # ASCII digits only (not \d)
MAX_GROUPS = 8      # the planner tries every subset of groups: its time doubles with each group
MAX_GPUS = 2**20    # GPUs in all (the largest clusters built have ~1e5); the planner loops over divisors


def _too_big(groups: list[DeviceGroup]) -> str | None:
    """Why a cluster of ``groups`` is too big to plan (MAX_GROUPS, MAX_GPUS), or None."""
    if len(groups) > MAX_GROUPS:
        return f"more than {MAX_GROUPS} groups (the search doubles with each group; merge identical ones)"
    gpus = sum(g.gpus for g in groups)
    return f"{gpus} GPUs, more than {MAX_GPUS}" if gpus > MAX_GPUS else None


def parse_spec(spec: str) -> Cluster:
    """``PRESET:NODESxGPUS[+...]``; GPUS may be at most the preset's GPUs per node."""
    groups = []
    for part in spec.split("+"):
        m = _SPEC.match(part.strip())
        if not m or m.group(1) not in PRESETS:
            raise UsageError(f"bad cluster group {part!r}: expected PRESET:NODESxGPUS with PRESET one of "
                             f"{', '.join(PRESETS)}")
        base = PRESETS[m.group(1)]
        if max(len(m.group(2) or ""), len(m.group(3) or "")) > 9:     # int() refuses > 4300 digits
            raise UsageError(f"bad cluster group {part!r}: more than {MAX_GPUS} GPUs")
        nodes = int(m.group(2) or 1)
        g = int(m.group(3) or base.gpus_per_node)
        if nodes < 1 or g < 1:
            raise UsageError(f"bad cluster group {part!r}: nodes and GPUs per node must be positive")
        if g > base.gpus_per_node:
            raise UsageError(f"bad cluster group {part!r}: a {base.name} node has {base.gpus_per_node} GPUs, "
                             f"not {g}")
        groups.append(replace(base, nodes=nodes, gpus_per_node=g))
        too_big = _too_big(groups)
        if too_big:
            raise UsageError(f"bad cluster group {part!r}: the cluster has {too_big}")
    return Cluster(groups)


_JSON_FIELDS = {"name": ("name", 1.0), "nodes": ("nodes", 1.0), "gpus_per_node": ("gpus_per_node", 1.0),
                "memory_gib": ("memory", GIB), "peak_tflops": ("peak_flops", 1e12),
                "hbm_gbps": ("hbm_bandwidth", 1e9), "intra_gbps": ("intra_bandwidth", 1e9),
                "inter_gbps": ("inter_bandwidth", 1e9), "intra_latency_us": ("intra_latency", 1e-6),
                "inter_latency_us": ("inter_latency", 1e-6)}


#: a group's numbers past these are typos, and a denormal speed would turn the costs into inf or nan
GROUP_RANGES = {"memory_gib": (1e-3, 1e6), "peak_tflops": (1e-3, 1e7), "hbm_gbps": (1e-3, 1e7),
                "intra_gbps": (1e-3, 1e7), "inter_gbps": (1e-3, 1e7), "intra_latency_us": (0, 1e7),
                "inter_latency_us": (0, 1e7)}
MAX_LINK_LATENCY_MS = 1e5  # a wide-area link's latency of more than 100 s is a typo


def read_cluster(path: str) -> Cluster:
    """A cluster from a JSON file (see the module docstring); errors name the offending line."""
    doc = jsonfile.load(path)
    if not isinstance(doc, jsonfile.Obj) or not isinstance(doc.get("groups"), list) or not doc["groups"]:
        raise InputError(path, getattr(doc, "line", 1), "a cluster file is an object with a non-empty "
                                                        "'groups' list")
    for key in doc:
        if key not in ("groups", "links"):
            raise InputError(path, doc.line, f"unknown field {key!r}")
    groups = []
    for obj in doc["groups"]:
        if not isinstance(obj, jsonfile.Obj):
            raise InputError(path, doc.line, f"each group must be an object, got {obj!r}")
        for key in obj:
            if key not in _JSON_FIELDS and key not in ("preset", "bf16", "site"):
                raise InputError(path, obj.line, f"unknown field {key!r}")
        base = None
        if "preset" in obj:
            preset = jsonfile.field(path, obj, "preset", str, minimum=None)
            if preset not in PRESETS:
                raise InputError(path, obj.line, f"unknown preset {preset!r}")
            base = PRESETS[preset]
        values = {}
        for key, (attr, scale) in _JSON_FIELDS.items():
            if key == "name":
                label = base.name if base else f"group{len(groups)}"
                values[attr] = jsonfile.field(path, obj, key, str, label, None)
                continue
            kind = int if key in ("nodes", "gpus_per_node") else float
            default = None if base is None else getattr(base, attr) / scale
            least, most = (0, MAX_GPUS) if kind is int else GROUP_RANGES[key]
            value = jsonfile.field(path, obj, key, kind, default, least, most)
            if value <= 0 and key not in ("intra_latency_us", "inter_latency_us"):
                raise InputError(path, obj.line, f"field {key!r} must be positive, got {value!r}")
            values[attr] = kind(value * scale) if kind is int else value * scale
        if base is not None and values["gpus_per_node"] > base.gpus_per_node:   # as the spec string
            raise InputError(path, obj.line, f"a {base.name} node has {base.gpus_per_node} GPUs, not "
                                             f"{values['gpus_per_node']}: leave out 'preset' and give every "
                                             "field to describe a bigger node")
        values["bf16"] = jsonfile.field(path, obj, "bf16", bool, base.bf16 if base else True, None)
        values["site"] = jsonfile.field(path, obj, "site", str, "", None)
        groups.append(DeviceGroup(**values))
        too_big = _too_big(groups)
        if too_big:
            raise InputError(path, obj.line, f"the cluster has {too_big}")
    return Cluster(groups, _read_links(path, doc, groups))


MAX_LINK_MBPS = 1e9  # a wide-area link of more than a petabit per second is a typo


def _read_links(path: str, doc: jsonfile.Obj, groups: list[DeviceGroup]) -> dict:
    """The ``links`` list: ``{"sites": [A, B], "mbps": megabits per second, "latency_ms": ms}`` per
    pair of sites; every pair of sites the groups name needs one (errors name the line)."""
    links: dict = {}
    entries = doc.get("links", [])
    if not isinstance(entries, list):
        raise InputError(path, doc.line, "'links' must be a list of objects")
    names = {g.site for g in groups}
    for obj in entries:
        if not isinstance(obj, jsonfile.Obj):
            raise InputError(path, doc.line, f"each link must be an object, got {obj!r}")
        for key in obj:
            if key not in ("sites", "mbps", "latency_ms"):
                raise InputError(path, obj.line, f"unknown field {key!r}")
        sites = obj.get("sites")
        if (not isinstance(sites, list) or len(sites) != 2 or not all(isinstance(x, str) for x in sites)
                or sites[0] == sites[1]):
            raise InputError(path, obj.line, "a link's 'sites' is a list of two different site names")
        unknown = [x for x in sites if x not in names]
        if unknown:
            raise InputError(path, obj.line, f"no group is at site {unknown[0]!r}")
        key = frozenset(sites)
        if key in links:
            raise InputError(path, obj.line, f"a second link between {sites[0]!r} and {sites[1]!r}")
        mbps = jsonfile.field(path, obj, "mbps", float, None, 1e-3, MAX_LINK_MBPS)
        latency = jsonfile.field(path, obj, "latency_ms", float, 0.0, 0, MAX_LINK_LATENCY_MS)
        links[key] = (mbps * 1e6 / 8, latency * 1e-3)
    ordered = list(dict.fromkeys(g.site for g in groups))
    for i, a in enumerate(ordered):
        for b in ordered[i + 1:]:
            if frozenset((a, b)) not in links:
                raise InputError(path, doc.line, f"no link between sites {a!r} and {b!r}: add one to 'links' "
                                                 f"(sites, mbps, latency_ms)")
    return links


def load_cluster(spec: str) -> Cluster:
    """A spec string or a JSON file path."""
    if spec.endswith(".json") or "/" in spec:
        return read_cluster(spec)
    return parse_spec(spec)
