"""Fit the GEMM efficiency, eta(h) = ETA * h / (h + H0), and a fixed overhead per block pass, on
Megatron SC'21 Table 1 and Fig. 16.

python benchmarks/calibrate_dnn_eta.py

Table 1 runs b = 1 and s = 2048 everywhere, so it cannot tell a fixed overhead per block pass (the
per-GPU GEMM shape: b*s tokens by h/t) from the h curve; Fig. 16 can: for the 91B model at (t, p) =
(8, 8) and a batch of 512 the best micro-batch is 2, and without an overhead a larger micro-batch is
never cheaper per sample. So, for each overhead on a 10 us grid from 0: for each H0 on a grid, ETA
minimises the squared log error of the predicted TF/s per GPU of the expert configuration (published
t, p; full recompute; b = 1, as Megatron ran them) over the calibration rows, the odd Table 1 rows
(golden-section search); the best (ETA, H0) then predicts Fig. 16's micro-batches for both readings of
the 91B model. The first overhead at which both pick b = 2 is chosen, and every Table 1 row's error is
printed with the validation error over the even rows (1.7B, 7.5B, 39.1B, 145.6B, 529.6B).
"""

from __future__ import annotations

import math

from yewpy.apps.dnn.cluster import load_cluster
from yewpy.apps.dnn.cost import Training, megatron_flops
from yewpy.apps.dnn.model_files import load_model
from yewpy.apps.dnn.models import transformer
from yewpy.apps.dnn_plan import plan

# name, t, p, GPUs, batch, published TF/s per GPU (Megatron SC'21 Table 1)
TABLE1 = [
    ("megatron-1.7b", 1, 1, 32, 512, 137),
    ("megatron-3.6b", 2, 1, 64, 512, 138),
    ("megatron-7.5b", 4, 1, 128, 512, 142),
    ("megatron-18.4b", 8, 1, 256, 1024, 135),
    ("megatron-39.1b", 8, 2, 512, 1536, 138),
    ("megatron-76.1b", 8, 4, 1024, 1792, 140),
    ("megatron-145.6b", 8, 8, 1536, 2304, 148),
    ("megatron-310.1b", 8, 16, 1920, 2160, 155),
    ("megatron-529.6b", 8, 35, 2520, 2520, 163),
    ("megatron-1t", 8, 64, 3072, 3072, 163),
]
CALIBRATION = TABLE1[1::2]
VALIDATION = TABLE1[0::2]


def expert_tflops(row: tuple, eta: float, h0: float, overhead: float = 0.0) -> float:
    name, t, p, n, batch, _ = row
    model = load_model(name)
    train = Training(batch, 2048, eta=eta, eta_h0=h0, pass_overhead=overhead,
                     fix={"tp": t, "pp": p, "recompute": "full", "mb": 1})
    result = plan(model, load_cluster(f"dgx-a100-80g:{n // 8}x8"), train, top=1)
    achieved = megatron_flops(batch, 2048, model.meta["layers"], model.meta["hidden"], 51200)
    return achieved / n / result.objective / 1e12


def loss(rows: list, eta: float, h0: float, overhead: float = 0.0) -> float:
    return sum(math.log(expert_tflops(r, eta, h0, overhead) / r[5]) ** 2 for r in rows)


def best_eta(rows: list, h0: float, overhead: float = 0.0) -> tuple[float, float]:
    lo, hi = 0.4, 0.9
    g = (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = loss(rows, a, h0, overhead), loss(rows, b, h0, overhead)
    for _ in range(10):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = loss(rows, a, h0, overhead)
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = loss(rows, b, h0, overhead)
    eta = round((lo + hi) / 2, 3)
    return eta, loss(rows, eta, h0, overhead)


# Megatron SC'21 Fig. 16: two readings of its 91B GPT (no layer count is given), both 91B by Eq. 2
FIG16_MODELS = [(112, 8192, 64), (72, 10240, 80)]


def fig16_best(eta: float, h0: float, overhead: float) -> list[int]:
    """The predicted best micro-batch of each reading at (t, p) = (8, 8), 64 A100s, batch 512, 1F1B."""
    best = []
    for layers, hidden, heads in FIG16_MODELS:
        model = transformer("gpt-91b", layers=layers, hidden=hidden, heads=heads, vocab=51200, seq=2048)
        times = {}
        for b in (1, 2, 4, 8):
            train = Training(512, 2048, eta=eta, eta_h0=h0, pass_overhead=overhead,
                             fix={"tp": 8, "pp": 8, "mb": b, "schedule": "1f1b"})
            times[b] = plan(model, load_cluster("dgx-a100-80g:8x8"), train, top=1).objective
        best.append(min(times, key=times.get))
    return best


def main() -> None:
    for step in range(8):
        overhead = step * 10e-6
        err, eta, h0 = min((*reversed(best_eta(CALIBRATION, h0, overhead)), h0) for h0 in (500, 1000, 1500))
        rms = math.sqrt(err / len(CALIBRATION))
        best = fig16_best(eta, h0, overhead)
        print(f"overhead {overhead * 1e6:3.0f} us: eta = {eta:.3f}, H0 = {h0:5d}, calibration RMS log error "
              f"{rms:.4f}; Fig. 16 best micro-batch {best}", flush=True)
        if best == [2] * len(FIG16_MODELS):
            break
    print(f"chosen: eta = {eta}, H0 = {h0}, overhead = {overhead * 1e6:g} us")
    for row in TABLE1:
        tf = expert_tflops(row, eta, h0, overhead)
        role = "calibration" if row in CALIBRATION else "validation"
        print(f"  {row[0]:16s} {role:11s} predicted {tf:6.1f} published {row[5]} ({tf / row[5] - 1:+.1%})")
    rms = math.sqrt(loss(VALIDATION, eta, h0, overhead) / len(VALIDATION))
    print(f"validation RMS log error {rms:.4f}")


if __name__ == "__main__":
    main()
