"""Published training runs the cost model is checked against (``yewpy dnn-plan --validate``).

Each run is a model, a cluster, a batch and the parallel layout its authors report, with the
iteration time they report (or one derived from their throughput and their own FLOP formula).
The planner predicts each run's iteration time with the layout pinned and the rest searched, as
``benchmarks/calibrate_dnn_eta.py`` does for Megatron-LM SC'21 Table 1, whose rows are not here:
they set the model's defaults. Every second run, in the order listed, is held out: nothing is
fitted on it (``Run.held_out``). The one value fitted here is ``TP_COMM_OVERLAP``.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

from yewpy.apps.dnn.cluster import Cluster, parse_spec
from yewpy.apps.dnn.cost import Training, megatron_flops
from yewpy.apps.dnn.models import Model, transformer

#: the share of each pass's tensor-parallel communication that Megatron-Core hides behind its
#: GEMMs with ``--tp-comm-overlap``: ``fit_tp_overlap`` on the calibration half of the Megatron-LM
#: README rows (benchmarks/calibrate_dnn_published.py), the only value fitted on this table
TP_COMM_OVERLAP = 0.8
#: the shares ``fit_tp_overlap`` tries
OVERLAP_GRID = tuple(k / 10 for k in range(11))


@dataclass(frozen=True)
class Source:
    key: str
    citation: str


KORTHIKANTI = Source("korthikanti-2022", "Korthikanti et al., Reducing Activation Recomputation in Large "
                     "Transformer Models, MLSys 2023 (arXiv 2205.05198), Table 5 and §6.3")
MEGASCALE = Source("megascale-2024", "Jiang et al., MegaScale, NSDI 2024 (arXiv 2402.15627), Table 2, "
                                     "Megatron-LM rows")
MEGATRON_README = Source("megatron-core-2024", "NVIDIA Megatron-LM README (2024-07, commit f2e5db4), "
                                               "weak-scaling table (images/model_table.png)")
NEMOTRON = Source("nemotron4-15b-2024", "Parmar et al., Nemotron-4 15B Technical Report (arXiv 2402.16819), "
                                        "Table 2")
BLOOM = Source("bloom-2022", "BigScience, tr11-176B-ml README (production log, iteration 85376) and "
                             "chronicles-prequel.md 'Rebalancing layers'")
MTNLG = Source("mt-nlg-2022", "Smith et al., Using DeepSpeed and Megatron to Train Megatron-Turing NLG 530B "
                              "(arXiv 2201.11990), §2.4, as quoted by llm-analysis")


@dataclass(frozen=True)
class Run:
    """One published run: what was trained, where, how, and how long an iteration took."""

    id: str
    source: Source
    model: Model
    cluster: Cluster
    batch: int
    seq: int
    fix: dict
    seconds: float              # published seconds per iteration
    derived: str = ""           # how ``seconds`` was derived where the source gives a throughput
    sequence_parallel: bool = True
    tp_overlap: float = 0.0     # the run used --tp-comm-overlap: TP_COMM_OVERLAP
    zero: tuple = (0, 1, 2, 3)
    held_out: bool = field(default=False, compare=False)

    def training(self) -> Training:
        interleave = {"interleave": (self.fix["v"],)} if "v" in self.fix else {}
        return Training(self.batch, self.seq, fix=dict(self.fix), sequence_parallel=self.sequence_parallel,
                        tp_overlap=self.tp_overlap, zero=self.zero, **interleave)


def _gpt(layers: int, hidden: int, heads: int, vocab: int, seq: int, **shape) -> Model:
    return transformer(f"gpt-{layers}x{hidden}", layers, hidden, heads, vocab, seq, **shape)


def _a100(gpus: int) -> Cluster:
    return parse_spec(f"dgx-a100-80g:{gpus // 8}x8")


def _h100(gpus: int) -> Cluster:
    return parse_spec(f"dgx-h100-80g:{gpus // 8}x8")


def _omni_path(gpus: int) -> Cluster:
    """BLOOM's Jean Zay nodes: 8 A100 80GB "using NVLink 4 inter-gpu connects, 4 OmniPath links"
    (the BigScience model cards' Hardware line, e.g. bigscience/bloomz), read as four NVLink 3 links
    of 25 GB/s per direction on each GPU, where a DGX A100's NVSwitch gives it twelve, and four
    Omni-Path links of 100 Gb/s per node."""
    cluster = _a100(gpus)
    return Cluster([dataclasses.replace(g, intra_bandwidth=4 * 25e9, inter_bandwidth=4 * 12.5e9 / 8)
                    for g in cluster.groups])


def _korthikanti() -> list[Run]:
    runs = []
    for name, layers, hidden, heads, pp, v, gpus, batch, selective, full in (
            ("22B", 48, 6144, 64, 1, 0, 8, 4, 1.10, 1.42),
            ("175B", 96, 12288, 96, 8, 3, 64, 64, 13.75, 18.13),
            ("530B", 105, 20480, 128, 35, 3, 280, 280, 37.83, 49.05),
            ("1T", 128, 25600, 160, 64, 0, 512, 512, 71.49, 94.42)):
        model = _gpt(layers, hidden, heads, 51200, 2048)
        fix = {"tp": 8, "pp": pp, "dp": 1, "mb": 4 if pp == 1 else 1}
        if v:
            fix.update(schedule="interleaved", v=v)
        runs.append(Run(f"{name} SP+selective", KORTHIKANTI, model, _a100(gpus), batch, 2048,
                        {**fix, "recompute": "selective"}, selective))
        runs.append(Run(f"{name} full recompute", KORTHIKANTI, model, _a100(gpus), batch, 2048,
                        {**fix, "recompute": "full"}, full, sequence_parallel=False))
    model = _gpt(105, 20480, 128, 51200, 2048)
    runs.append(Run("530B SP+selective, dp 8", KORTHIKANTI, model, _a100(2240), 2240, 2048,
                    {"tp": 8, "pp": 35, "dp": 8, "mb": 1, "schedule": "interleaved", "v": 3,
                     "recompute": "selective"}, 39.15))
    return runs


def _megascale() -> list[Run]:
    model = _gpt(96, 12288, 128, 64000, 2048)        # their 175B has 128 heads (Table 1)
    return [Run(f"175B on {gpus}", MEGASCALE, model, _a100(gpus), batch, 2048,
                {"tp": 8, "pp": 8, "schedule": "interleaved", "v": 6}, seconds)
            for gpus, batch, seconds in ((256, 768, 40.0), (512, 768, 21.2), (768, 768, 15.2),
                                         (1024, 768, 11.9), (3072, 6144, 29.02), (6144, 6144, 14.78),
                                         (8192, 6144, 12.24), (12288, 6144, 8.57))]


def _megatron_readme() -> list[Run]:
    runs = []
    for name, layers, hidden, heads, tp, pp, gpus, batch, tflops in (
            ("1.7B", 24, 2048, 16, 1, 1, 48, 192, 408.8), ("7.1B", 30, 4096, 32, 2, 1, 96, 192, 465.9),
            ("16B", 32, 6144, 48, 4, 1, 192, 192, 489.1), ("32B", 48, 7168, 56, 8, 1, 384, 192, 459.6),
            ("70B", 84, 8192, 64, 8, 2, 768, 384, 419.7), ("119B", 92, 10240, 80, 8, 4, 1536, 768, 420.5),
            ("177B", 96, 12288, 96, 8, 6, 2304, 1152, 432.8),
            ("314B", 96, 16384, 128, 8, 8, 3072, 1536, 474.4),
            ("462B", 112, 18432, 144, 8, 16, 6144, 3072, 459.9)):
        model = _gpt(layers, hidden, heads, 131072, 4096)
        flops = megatron_flops(batch, 4096, layers, hidden, 131072, recompute=False)
        seconds = flops / (gpus * tflops * 1e12)
        runs.append(Run(f"{name} on {gpus}", MEGATRON_README, model, _h100(gpus), batch,
                        4096, {"tp": tp, "pp": pp}, seconds, f"{tflops} TFLOP/s per GPU, Megatron's Eq. 3 "
                        "without recompute", tp_overlap=TP_COMM_OVERLAP))
    return runs


def _nemotron() -> list[Run]:
    model = transformer("nemotron-4-15b", 32, 6144, 48, 256000, 4096, ffn=24576, kv_heads=8, bias=False,
                        tied=False, positions=False)
    return [Run(f"15B on {gpus}", NEMOTRON, model, _h100(gpus), batch, 4096, {"tp": 8, "pp": 1}, seconds,
                zero=(1,))
            for gpus, batch, seconds in ((768, 384, 0.57), (1536, 768, 0.58), (2304, 1152, 0.64))]


def _bloom() -> list[Run]:
    runs = []
    for label, heads, tp, mb, seconds in (("production", 112, 4, 2, 104.70), ("tp 8", 64, 8, 2, 121.63),
                                          ("64 heads", 64, 4, 2, 102.03), ("128 heads", 128, 4, 2, 105.89),
                                          ("mb 4", 64, 4, 4, 102.27)):
        model = _gpt(70, 14336, heads, 250880, 2048, positions=False)
        runs.append(Run(f"176B {label}", BLOOM, model, _omni_path(384), 2048, 2048,
                        {"tp": tp, "pp": 12, "mb": mb, "schedule": "1f1b", "recompute": "full", "zero": 1},
                        seconds, sequence_parallel=False))
    return runs


def _mt_nlg() -> list[Run]:
    model = _gpt(105, 20480, 128, 51200, 2048)
    return [Run(f"530B on {gpus}", MTNLG, model, _a100(gpus), 1920, 2048,
                {"tp": 8, "pp": 35, "mb": 1, "schedule": "1f1b", "recompute": "full"}, seconds,
                sequence_parallel=False)
            for gpus, seconds in ((2240, 60.1), (2800, 50.2), (3360, 44.4))]


def runs() -> list[Run]:
    """Every run, in the order listed; the second, fourth, ... are held out."""
    listed = [*_korthikanti(), *_megascale(), *_megatron_readme(), *_nemotron(), *_bloom(), *_mt_nlg()]
    return [dataclasses.replace(run, held_out=k % 2 == 1) for k, run in enumerate(listed)]


def summary(errors: list[float]) -> dict:
    """Median and maximum absolute relative error."""
    absolute = [abs(e) for e in errors]
    return {"runs": len(errors), "median_abs_error": statistics.median(absolute),
            "max_abs_error": max(absolute)}


def log_error(run: Run, predict: Callable[[Run], float], overlap: float | None = None) -> float:
    """log(predicted / published) for ``run``, with its TP overlap replaced by ``overlap`` if given."""
    if overlap is not None:
        run = dataclasses.replace(run, tp_overlap=overlap)
    return math.log(predict(run) / run.seconds)


def fit_tp_overlap(predict: Callable[[Run], float]) -> tuple[float, dict]:
    """The share on ``OVERLAP_GRID`` with the least squared log error over the Megatron-LM README
    runs not held out; returns it and each share's (calibration, held-out) sums, the second only
    printed."""
    rows = [r for r in runs() if r.source is MEGATRON_README]
    sums = {}
    for overlap in OVERLAP_GRID:
        sums[overlap] = tuple(sum(log_error(r, predict, overlap) ** 2 for r in rows if r.held_out == held)
                              for held in (False, True))
    return min(OVERLAP_GRID, key=lambda o: sums[o][0]), sums
