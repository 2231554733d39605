"""Fit TP_COMM_OVERLAP, the one value fitted on the published runs of ``yewpy dnn-plan --validate``.

python benchmarks/calibrate_dnn_published.py

Megatron-Core's README runs hide tensor-parallel communication behind GEMMs (``--tp-comm-overlap``);
Megatron-LM SC'21, whose Table 1 set every other default, did not. For each share on a 0.1 grid this
predicts the README rows not held out (7.1B, 32B, 119B, 314B; 1.7B, 16B, 70B, 177B and 462B
are held out) and prints the sum of their squared log errors; the held-out rows' sum is printed
beside it and never used to choose.
"""

from __future__ import annotations

from yewpy.apps.dnn import published
from yewpy.apps.dnn_plan import plan


def predict(run: published.Run) -> float:
    return plan(run.model, run.cluster, run.training(), top=1).objective


def main() -> None:
    best, sums = published.fit_tp_overlap(predict)
    print("overlap  calibration  held out (not used)")
    for overlap, (calibration, held_out) in sums.items():
        mark = "  <- fitted" if overlap == best else ""
        print(f"{overlap:7.1f}  {calibration:11.5f}  {held_out:.5f}{mark}")
    print(f"TP_COMM_OVERLAP in apps/dnn/published.py: {published.TP_COMM_OVERLAP} "
          f"({'as fitted' if best == published.TP_COMM_OVERLAP else 'NOT the fitted value'})")


if __name__ == "__main__":
    main()
