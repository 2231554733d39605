"""Tensor fusion: which gradients share an all-reduce bucket (``search``: the DP and the
branch-and-bound core in ``_fusion``), the balance of the last buckets (``balance``), gradient
profiles (``profile``) and profiles built from a planner model (``model``). Shared pieces (models,
clusters) sit beside it in ``apps/dnn``."""
