"""Tensor fusion for wait-free backpropagation: bucket the gradients to minimise iteration time.

Gradients appear one by one during the backward pass; a bucket (contiguous gradients) is
all-reduced once its last gradient exists and its stream is free, at an alpha-beta cost.  Few
buckets pay alpha few times but start late; many buckets overlap with the backward pass but pay
alpha often.  ``Fusion.dp()`` is the exact dynamic program, O(N K) (one stream, optionally a bucket
count cap K and a bytes cap per bucket); ``Fusion.search()`` is a branch and bound (a compiled
minimising core) that also handles several streams and equals the DP where both apply.
``no_fusion``, ``single_bucket`` and ``fixed`` (PyTorch DDP's size-capped buckets) are the baselines.

>>> from yewpy.apps.dnn.fusion.profile import Profile
>>> p = Profile("toy", ("a", "b", "c"), (1000, 100, 100), (10, 300, 10), alpha_ns=50, beta_fs=100_000)
>>> f = Fusion(p)                # the big first gradient goes alone, the two late ones together
>>> f.dp().ends, f.dp().comm_ns, f.no_fusion().comm_ns, f.single_bucket().comm_ns
([1, 3], 390, 430, 490)
>>> f.search().objective
390
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from yewpy.apps.dnn.fusion._fusion import MAX_STREAMS, TABLE_ENTRIES, FusionCore, Instance, dp, replay
from yewpy.apps.dnn.fusion.balance import SUMS, balance_tail
from yewpy.apps.dnn.fusion.profile import NS, Profile
from yewpy.errors import UsageError
from yewpy.result import Result

__all__ = ["MIB", "Fusion", "Plan"]

MIB = 1 << 20
QUICK = 1 << 12         # combinations per half for the first, cheap balanced split
MERGE_STEPS = 1_000_000  # trials and end-time steps merged() may take (about 0.5 s)
DP_TABLE_ENTRIES = TABLE_ENTRIES  # the DP's table under a count cap: (K + 1)(N + 1) entries, as the core's


@dataclass
class Plan:
    """A bucketing and its schedule: ``ends[k]`` is one past bucket k's last tensor (backward order)."""

    ends: list[int]
    ranks: list[int] | None
    comm_ns: int                         # end of the last all-reduce, from the start of the backward
    schedule: list[tuple[int, int, int]]  # (start ns, end ns, stream) per bucket
    feasible: bool = True

    def buckets(self) -> list[tuple[int, int]]:
        """(first, last) tensor index of every bucket."""
        return [(a, b - 1) for a, b in zip([0, *self.ends[:-1]], self.ends)]


class Fusion:
    """A bucketing problem: a profile plus the variant (streams, bucket-count cap, bytes cap per bucket).

    ``max_buckets`` = 0 and ``cap_bytes`` = 0 mean no cap.  A tensor larger than ``cap_bytes`` gets a
    bucket of its own (as PyTorch DDP does) rather than making the instance infeasible.
    """

    def __init__(self, profile: Profile, streams: int = 1, max_buckets: int = 0, cap_bytes: int = 0) -> None:
        if not 1 <= streams <= MAX_STREAMS:
            raise UsageError(f"streams must be 1..{MAX_STREAMS}, got {streams}")
        if max_buckets < 0 or cap_bytes < 0:
            raise UsageError("bucket caps must be >= 0 (0: no cap)")
        self.profile = profile
        self.streams = streams
        self.max_buckets = max_buckets
        self.cap_bytes = cap_bytes
        self.n = len(profile.tensors)
        self.ready = profile.ready_ns
        self._costs = (profile.alpha_ns, profile.beta_fs, profile.gamma_fs)
        self._instance = Instance(profile.nbytes, self.ready, *self._costs, cap_bytes)  # the core's costs
        self._dp: Plan | None = None
        fewest = self._instance.fewest_buckets() if max_buckets else 0
        if fewest > max_buckets > 0:
            raise UsageError(f"the bytes cap needs at least {fewest} buckets, more than the cap of "
                             f"{max_buckets}")

    # -- plans ------------------------------------------------------------------------------------

    def feasible(self, ends: list[int]) -> bool:
        """Whether a bucketing respects the caps."""
        if self.max_buckets and len(ends) > self.max_buckets:
            return False
        if self.cap_bytes:
            starts = [0, *ends[:-1]]
            for a, b in zip(starts, ends):
                if b - a > 1 and sum(self.profile.nbytes[a:b]) > self.cap_bytes:
                    return False
        return True

    def evaluate(self, ends: list[int], ranks: list[int] | None = None) -> Plan:
        """The schedule of a bucketing (streams by ``ranks``; default: the stream free first)."""
        comm, schedule = replay(self.profile.nbytes, self.ready, *self._costs, self.streams, ends, ranks)
        return Plan(list(ends), None if ranks is None else list(ranks), comm, schedule, self.feasible(ends))

    def no_fusion(self) -> Plan:
        """One all-reduce per tensor."""
        return self.evaluate(list(range(1, self.n + 1)))

    def single_bucket(self) -> Plan:
        """One all-reduce after the whole backward pass."""
        return self.evaluate([self.n])

    def fixed_ends(self, bucket_bytes: int) -> list[int]:
        """PyTorch DDP's rule: add gradients in backward order, close a bucket once it holds >= the cap."""
        if bucket_bytes <= 0:
            raise UsageError(f"the fixed bucket size must be > 0 bytes, got {bucket_bytes}")
        ends, size = [], 0
        for k, b in enumerate(self.profile.nbytes):
            size += b
            if size >= bucket_bytes:
                ends.append(k + 1)
                size = 0
        if not ends or ends[-1] != self.n:
            ends.append(self.n)
        return ends

    def fixed(self, bucket_bytes: int) -> Plan:
        """Buckets of ``bucket_bytes`` (DDP's bucket_cap_mb, in bytes)."""
        return self.evaluate(self.fixed_ends(bucket_bytes))

    def dp_fits(self) -> bool:
        """Whether the DP's table, (K + 1)(N + 1) entries under a count cap K, stays within
        ``DP_TABLE_ENTRIES``."""
        layers = self.max_buckets if 0 < self.max_buckets < self.n else 1
        return (layers + 1) * (self.n + 1) <= DP_TABLE_ENTRIES

    def dp(self) -> Plan:
        """The exact optimum on one stream (with the caps) by dynamic programming, in O(N) time
        per bucket count; computed once (a one-stream search under a count cap starts from it, and
        the CLI compares with it)."""
        if self.streams != 1:
            raise UsageError("the DP is exact for one stream only; use the branch and bound (bnb) for "
                             "--streams > 1")
        if not self.dp_fits():
            mib = (self.max_buckets + 1) * (self.n + 1) * 8 / 2**20
            raise UsageError(f"the DP's table for {self.n} tensors and at most {self.max_buckets} buckets "
                             f"needs {mib:,.0f} MiB, over its {DP_TABLE_ENTRIES * 8 / 2**20:g} MiB; the "
                             f"branch and bound (bnb) needs no table")
        if self._dp is None:
            _, ends = dp(self.profile.nbytes, self.ready, *self._costs, self.max_buckets, self.cap_bytes)
            self._dp = self.evaluate(ends)
        return self._dp

    def merged(self, plan: Plan) -> Plan:
        """The plan with neighbouring buckets merged while the last all-reduce ends no later and the
        caps hold (one stream): optima tie often, as a small bucket hidden behind the backward pass
        costs nothing, and a user reads the plan with the fewest buckets more easily.

        One stream: bucket k ends at f_k = max(f_{k-1}, r_k) + its cost. A merge that ends the
        merged bucket d later than the second of the two delays bucket k after it by
        max(0, d - the stream's idle time before k), and so the last end by max(0, d - the idle time
        after it in all): one sum per trial (``idle_after``), and the end times are walked forward
        only for a merge that is kept, until one is unchanged. Where the stream stays busy those
        walks are long (20,000 buckets: 49 million steps), so merging stops after ``MERGE_STEPS``
        trials and steps in all, with the merges made by then."""
        if self.streams != 1 or not plan.feasible:
            return plan
        ends, finish = list(plan.ends), [end for _, end, _ in plan.schedule]
        changed, steps = True, 0
        while changed and steps < MERGE_STEPS:      # passes: a merge may let an earlier one pass
            changed, i = False, 0
            idle_after = self._idle_after(ends, finish)
            while i < len(ends) - 1 and steps < MERGE_STEPS:
                steps += 1
                t = self._merged_end(ends, finish, i)
                if t is None or t - finish[i + 1] > idle_after[i + 2]:
                    i += 1
                    continue
                out, m = [t], i + 1                 # bucket m (old numbering) ends where t's does
                while t != finish[m] and m + 1 < len(ends):
                    m += 1
                    t = max(t, self.ready[ends[m] - 1]) + self._instance.bucket_cost(ends[m - 1], ends[m])
                    out.append(t)
                steps += m - i
                del ends[i]
                finish[i:m + 1] = out
                del idle_after[i + 1]
                for k in range(min(m, len(ends) - 1), i - 1, -1):   # idle before buckets i..m changed
                    idle = max(0, self.ready[ends[k] - 1] - finish[k - 1]) if k else 0
                    idle_after[k] = idle_after[k + 1] + idle
                changed = True                      # stay at i: the bucket may take the next one too
        if len(ends) == len(plan.ends):
            return plan
        best = self.evaluate(ends)
        if best.comm_ns > plan.comm_ns:
            raise RuntimeError("internal error: merging buckets delayed the last all-reduce")
        return best

    def _idle_after(self, ends: list[int], finish: list[int]) -> list[int]:
        """[k]: the stream's idle time before buckets k, k + 1, ... (waiting for their gradients)."""
        out = [0] * (len(ends) + 1)
        for k in range(len(ends) - 1, 0, -1):
            out[k] = out[k + 1] + max(0, self.ready[ends[k] - 1] - finish[k - 1])
        return out

    def _merged_end(self, ends: list[int], finish: list[int], i: int) -> int | None:
        """When buckets i and i + 1 merged would end, or None when the bytes cap forbids it."""
        start, end = ends[i - 1] if i else 0, ends[i + 1]
        if not self._instance.bucket_fits(start, end):
            return None
        return max(finish[i - 1] if i else 0, self.ready[end - 1]) + self._instance.bucket_cost(start, end)

    def baselines(self, bucket_mb: float = 25.0) -> dict[str, Plan]:
        """No fusion, a single bucket, DDP 25 MB, Horovod's 64 MB and ``bucket_mb`` (when different)."""
        out = {"no_fusion": self.no_fusion(), "single_bucket": self.single_bucket()}
        for mb in sorted({25.0, 64.0, float(bucket_mb)}):
            out[f"fixed_{mb:g}mb"] = self.fixed(round(mb * MIB))
        return out

    def balanced(self, combos: int = SUMS) -> Plan | None:
        """A multi-stream heuristic: the bucketing that is optimal for one stream S times as fast
        (the bound's relaxation, docs/fusion.md), list-scheduled; on two streams the buckets that
        start after the ramp-up are split to balance the streams' ends (``fusion.balance``, with
        at most ``combos`` count combinations per half of its meet in the middle). None where the
        DP's table would not fit (``dp_fits``)."""
        if not self.dp_fits():
            return None
        scaled = [self.streams * r for r in self.ready]
        _, ends = dp(self.profile.nbytes, scaled, *self._costs, self.max_buckets, self.cap_bytes)
        if self.streams != 2:
            return self.evaluate(ends)
        costs = [e - s for s, e, _ in self.evaluate(ends).schedule]
        free, ramp = [0, 0], 0                      # the ramp-up: until a bucket waits for a stream
        while ramp < len(ends) and min(free) <= self.ready[ends[ramp] - 1]:
            free[free.index(min(free))] = max(min(free), self.ready[ends[ramp] - 1]) + costs[ramp]
            ramp += 1
        plans = []
        for start in sorted({ramp, ramp + 1, ramp + 2, 2 * ramp, 4 * ramp}):
            streams = balance_tail(list(self.ready), costs, ends, start, combos)
            free, ranks = [0, 0], []
            for end, s, cost in zip(ends, streams, costs):   # stream ids -> ranks as replay() orders them
                r = self.ready[end - 1]
                order = sorted(range(2), key=lambda t: (max(free[t], r), t))
                ranks.append(order.index(s))
                free[s] = max(free[s], r) + cost
            plans.append(self.evaluate(ends, ranks))
            if max(free) - min(free) <= 1:          # the ends meet: no later start can do better
                break
        return min(plans, key=lambda p: p.comm_ns)

    # -- branch and bound ----------------------------------------------------------------------

    def core(self) -> FusionCore:
        return FusionCore(self.profile.nbytes, self.ready, *self._costs, self.streams, self.max_buckets,
                          self.cap_bytes)

    def search(self, coordination: Any = "seq", **params: Any) -> Result:
        """The optimal bucketing by branch and bound; ``result.solution`` is a ``Plan``.

        The first incumbent is the best feasible baseline (no fusion, one bucket, 25 MB, 64 MB) or,
        with several streams and a baseline above the root bound, ``balanced()`` when it is better
        (a cheap split first, the full one only when the cheap one beat the baselines). On one
        stream under a bucket-count cap it is the DP's plan (O(N K)): every node's bound is at
        least that optimum, so the root's children are all pruned, where the search alone ran out
        of time on 20,000 tensors.
        """
        params.setdefault("prune_level", False)      # sibling bounds are not monotone
        seeds = [p for p in self.baselines().values() if p.feasible]
        if self.streams == 1 and 0 < self.max_buckets < self.n and self.dp_fits():
            seeds.append(self.dp())
        seed = min(seeds, key=lambda p: p.comm_ns, default=None)
        core = self.core()                          # its tables are built once (a count cap's: O(N K))
        if self.streams > 1 and (seed is None or seed.comm_ns > core.node_bound([])):
            for combos in (QUICK, SUMS):            # a cheap split first; refine only if it helps
                plan = self.balanced(combos)
                if plan is None or seed is not None and plan.comm_ns >= seed.comm_ns:
                    break
                seed = plan
        if seed is not None and "initial_bound" not in params:
            params["initial_bound"] = seed.comm_ns
            params["initial_solution"] = list(zip(seed.ends, seed.ranks or [0] * len(seed.ends)))
        result = core.search(coordination, **params)
        if result.solution is not None:
            ends = [e for e, _ in result.solution]
            plan = self.evaluate(ends, [r for _, r in result.solution])
            if result.status == "optimal" and plan.comm_ns != result.objective:
                raise RuntimeError("internal error: the plan's schedule does not give the search's objective")
            result.solution = plan
        result.metrics["initial_bound"] = None if seed is None else seed.comm_ns
        return result

    # -- reporting -----------------------------------------------------------------------------

    def iteration_seconds(self, plan: Plan) -> float:
        """Forward + backward with the all-reduces that outlast it + the optimizer step."""
        return (self.profile.forward_ns + plan.comm_ns + self.profile.update_ns) / NS

    def describe(self, plan: Plan) -> dict:
        """The JSON form of a plan."""
        backward = self.ready[-1]
        sizes = [sum(self.profile.nbytes[a:b + 1]) for a, b in plan.buckets()]
        out = {"buckets": len(plan.ends), "iteration_seconds": self.iteration_seconds(plan),
               "comm_end_seconds": plan.comm_ns / NS, "exposed_comm_seconds": (plan.comm_ns - backward) / NS,
               "feasible": plan.feasible, "bucket_ranges": [list(b) for b in plan.buckets()],
               "bucket_bytes": sizes}
        if self.streams > 1:
            out["bucket_streams"] = [s for _, _, s in plan.schedule]
        return out
