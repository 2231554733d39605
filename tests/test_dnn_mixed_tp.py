"""Uneven tensor-parallel shares on two GPU kinds (``--mixed-tp``, HAP's sharding ratios): the nodes
of two groups are paired, every TP group takes t/2 GPUs of each kind, and each half does its share
of the work. The paired group's figures match an independent per-kind sum, the search stays exact,
uneven shares beat even ones by the kinds' speed ratio, and no launcher is handed such a plan."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from support import same_optimum, yewpy_cmd
from yewpy.apps.dnn.cluster import PRESETS, Cluster, load_cluster
from yewpy.apps.dnn.cost import SHARE_STEP, Training, stage_cost, tp_share_choices, uneven_tp_group
from yewpy.apps.dnn.models import transformer
from yewpy.apps.dnn.planner import ExhaustivePlanSearch, PlanSearch, describe, paired_formations

A100, V100 = PRESETS["dgx-a100-80g"], PRESETS["dgx-v100-32g"]


def pair(nodes: int = 1, gpus: int = 4, network: float | None = None, first=A100, second=V100,
         second_nodes: int | None = None) -> Cluster:
    """``nodes`` nodes of each kind (``second_nodes`` of the second, if given); ``network`` bytes/s
    per GPU between nodes (None: the presets')."""
    counts = (nodes, nodes if second_nodes is None else second_nodes)
    groups = [replace(g, nodes=k, gpus_per_node=gpus) for g, k in zip((first, second), counts)]
    if network:
        groups = [replace(g, inter_bandwidth=network) for g in groups]
    return Cluster(groups)


class PairedOnly:
    """A search over the shapes that use a paired group only (and, with ``share``, at that share)."""

    share: float | None = None

    def _shapes(self):
        groups = self.cluster.groups
        return [sh for sh in super()._shapes()
                if any(groups[p[0]].tp_shares and self.share in (None, groups[p[0]].tp_shares[0][1])
                       for p in sh.parts)]


class PairedSearch(PairedOnly, PlanSearch):
    pass


class PairedExhaustive(PairedOnly, ExhaustivePlanSearch):
    pass


def test_a_paired_group_costs_what_its_slower_half_needs():
    """The paired group's rate, HBM bandwidth and usable memory equal, for every share, what an
    independent per-kind sum gives: a TP group of t splits W FLOPs as x W on t/2 A100s and (1 - x) W
    on t/2 V100s; each kind's GPUs hold 2x (2(1 - x)) times an even share's state and head-split
    activations, but never less than an even share (their sequence-parallel activations are split
    evenly)."""
    train = Training(64, 2048)
    for x in (0.2, 0.5, 0.714, 0.9):
        g = uneven_tp_group(A100, V100, x, train)
        for t in (2, 4, 8):
            work = 1e15
            slowest = max(x * work / (t / 2) / A100.peak_flops, (1 - x) * work / (t / 2) / V100.peak_flops)
            assert work / t / g.peak_flops == pytest.approx(slowest, rel=1e-12)
            optimizer = max(x * work / (t / 2) / A100.hbm_bandwidth,
                            (1 - x) * work / (t / 2) / V100.hbm_bandwidth)
            assert work / t / g.hbm_bandwidth == pytest.approx(optimizer, rel=1e-12)
        for even_bytes in (10e9, 20e9, 30e9, 60e9):     # what one GPU of an even split would hold
            on_a, on_b = (even_bytes * (2 * share if share > 0.5 else 1) for share in (x, 1 - x))
            fits = on_a <= train.usable(A100) and on_b <= train.usable(V100)
            assert (even_bytes <= train.usable(g) * (1 + 1e-12)) == fits
        assert g.gpus_per_node == 16 and g.intra_bandwidth == V100.inter_bandwidth
        assert dict(g.tp_shares) == {A100.name: x, V100.name: pytest.approx(1 - x)}
        assert g.busier_share == pytest.approx(2 * max(x, 1 - x))


def test_the_share_choices_give_the_faster_kind_more():
    """Even, by peak FLOP/s (neither kind waits), halfway between, and the most before the faster
    kind's memory binds first where that lies between; each gives the faster kind at least half, and
    shares closer than SHARE_STEP are tried once."""
    train = Training(64, 2048)
    for first, second in ((A100, V100), (PRESETS["dgx-a100-40g"], V100), (V100, PRESETS["dgx-h100-80g"]),
                          (PRESETS["dgx-a100-40g"], PRESETS["dgx-v100-16g"])):
        xs = tp_share_choices(first, second, train)
        fast_first = first.peak_flops > second.peak_flops
        ys = [x if fast_first else 1 - x for x in xs]    # the faster kind's shares
        fast, slow = (first, second) if fast_first else (second, first)
        assert 0.5 in ys and all(0.5 <= y < 1 for y in ys)
        assert all(b - a >= SHARE_STEP for a, b in zip(sorted(ys), sorted(ys)[1:]))
        speed = [y for y in ys
                 if y / fast.peak_flops == pytest.approx((1 - y) / slow.peak_flops, rel=1e-9, abs=0)]
        assert speed
        cap = train.usable(fast) / (2 * train.usable(slow))
        if 0.5 + SHARE_STEP < cap < speed[0] - SHARE_STEP:
            assert any(y == pytest.approx(cap) for y in ys)
    assert tp_share_choices(A100, PRESETS["dgx-a100-40g"], train) == (0.5,)    # equal speed: even only


def test_the_paired_stage_arithmetic_matches_an_independent_sum_per_kind():
    """A one-stage plan on a paired group with free links and no fixed pass cost: its time is the
    slower kind's FLOPs over its rate, each kind's share of the work on its half of the TP group."""
    model = transformer("small", layers=4, hidden=4096, heads=32, vocab=32000, seq=1024)
    train = Training(16, 1024, pass_overhead=0.0, mixed_tp=True, recompute=("none",), zero=(0,),
                     microbatches=(1,), schedules=("1f1b",))
    cluster = pair(network=1e18)
    cluster = Cluster([replace(g, inter_latency=0.0) for g in cluster.groups])
    search = PairedSearch(model, cluster, train)
    checked = 0
    for sid, sh in enumerate(search.shapes):
        if sh.p != 1:
            continue
        tab = search.part_table(sid, 0)
        x = search.cluster.groups[sh.parts[0][0]].tp_shares[0][1]
        t = tab.t
        cost = stage_cost(tab, 0, search.n, "none", 0, 0, 1, sh.m, sh.schedule, 1, 1, train,
                          search.dp_link(sid, 0), None, search.n - 1, None)
        per_kind = []
        for kind, share in ((A100, x), (V100, 1 - x)):
            flops = sum(3 * blk.forward_flops(sh.b, 1024) / (train.eta * blk.boundary)
                        * (blk.boundary + train.eta_h0) for blk in model.blocks)  # over GEMM efficiency
            per_kind.append(share * flops / (t / 2) / kind.peak_flops)
        assert cost.tau == pytest.approx(max(per_kind), rel=1e-6)    # the links cost ~1e-10 s
        # data-parallel rings carry the busier half's parameter bytes: 2 max(x, 1 - x) even shares
        ring = search.dp_link(sid, 0)
        assert ring[3] == pytest.approx(1e18 * train.link_efficiency / (2 * max(x, 1 - x)))
        checked += 1
    assert checked >= 4


@settings(max_examples=10, deadline=None)
@given(layers=st.integers(2, 5), hidden=st.sampled_from([2048, 4096, 8192]),
       batch=st.sampled_from([8, 16, 64]), network=st.sampled_from([None, 150e9]),
       mem=st.sampled_from([0.15, 0.3, 0.6]),
       second=st.sampled_from(["dgx-v100-32g", "dgx-v100-16g", "dgx-a100-40g"]), paired_only=st.booleans(),
       second_nodes=st.sampled_from([1, 2]))
# the paired plan wins here: fast links between the nodes
@example(layers=4, hidden=8192, batch=16, network=150e9, mem=0.6, second="dgx-v100-32g", paired_only=False,
         second_nodes=1)
# a pair and the first kind's other node (paired only: no formation without the pair)
@example(layers=4, hidden=8192, batch=16, network=150e9, mem=0.3, second="dgx-v100-32g", paired_only=True,
         second_nodes=2)
def test_the_search_with_paired_groups_equals_the_exhaustive_tree(layers, hidden, batch, network, mem, second,
                                                                  paired_only, second_nodes):
    """Branch and bound equals the exhaustive tree with pairs of one node each, and with a pair of
    one node each beside a node of the second kind left over."""
    model = transformer("small", layers=layers, hidden=hidden, heads=32, vocab=32000, seq=1024)
    train = Training(batch, 1024, memory_fraction=mem, memory_reserve=0, microbatches=(1, 2, 4),
                     recompute=("none", "full"), mixed_tp=True, precision="fp16")
    cluster = pair(network=network, second=PRESETS[second], second_nodes=second_nodes)
    bnb_kind, oracle_kind = ((PairedSearch, PairedExhaustive) if paired_only
                             else (PlanSearch, ExhaustivePlanSearch))
    bnb = bnb_kind(model, cluster, train).search(prune_level=False)
    exhaustive = oracle_kind(model, cluster, train).search(prune_level=False)
    if same_optimum(bnb, exhaustive):
        assert bnb.nodes <= exhaustive.nodes


#: a GPT-3-width model of few layers (``hap_case``; the command-line test writes it as JSON)
WIDE = {"layers": 4, "hidden": 12288, "heads": 96, "vocab": 51200, "seq": 2048}


def hap_case() -> tuple:
    """``WIDE`` on 2 A100 and 2 V100 nodes whose links run at 150 GB/s per GPU (an NVLink domain
    across nodes): too few layers to balance a pipeline over the two kinds."""
    model = transformer("wide", **WIDE)
    return model, pair(nodes=2, gpus=8, network=150e9), Training(256, 2048, mixed_tp=True, precision="fp16")


def test_uneven_shares_beat_even_ones_by_the_kinds_speed_ratio():
    """HAP's sharding-ratio finding under our model: on TP groups of A100s and V100s, shares in
    proportion to speed run about (r_a + r_b) / 2 r_b = 1.75x faster than even shares, which leave the
    A100s waiting for the V100s; and with links fast enough the planner picks the paired plan over
    every plan without pairing (a pipeline over the kinds, or replicas with micro-batch shares)."""
    model, cluster, train = hap_case()
    times = {}
    for x in tp_share_choices(A100, V100, train):
        search = type("AtShare", (PairedSearch,), {"share": x})(model, cluster, train)
        times[round(x, 3)] = search.search().objective
    speed = round(A100.peak_flops / (A100.peak_flops + V100.peak_flops), 3)
    ratio = times[0.5] / times[speed]
    ceiling = (A100.peak_flops + V100.peak_flops) / (2 * V100.peak_flops)
    assert 0.95 * ceiling < ratio <= ceiling * (1 + 1e-9)
    assert min(times.values()) == times[speed] or times[speed] <= 1.01 * min(times.values())
    free = PlanSearch(model, cluster, replace(train, mixed_tp=False)).search()
    paired = PlanSearch(model, cluster, train).search()
    assert paired.objective < free.objective
    sh = PlanSearch(model, cluster, train, rank=False)
    best = describe(sh, paired.solutions[0][1])["plan"]
    assert all("tp_shares" in stage for stage in best["stages"])
    # with the DGX presets' own NICs (25 and 12.5 GB/s per GPU) the TP all-reduces make pairing lose
    slow = pair(nodes=2, gpus=8)
    assert PlanSearch(model, slow, train).search().objective == \
        pytest.approx(PlanSearch(model, slow, replace(train, mixed_tp=False)).search().objective, rel=1e-12)


def test_the_command_line_prints_the_shares_and_no_launcher_runs_them(tmp_path):
    (tmp_path / "model.json").write_text(json.dumps({"transformer": WIDE}))
    (tmp_path / "cluster.json").write_text(json.dumps({"groups": [
        {"preset": "dgx-a100-80g", "nodes": 2, "inter_gbps": 150},
        {"preset": "dgx-v100-32g", "nodes": 2, "inter_gbps": 150}]}))
    base = [*yewpy_cmd(), "dnn-plan", "--model", "model.json", "--cluster", "cluster.json",
            "--global-batch", "256"]
    out = subprocess.run([*base, "--mixed-tp"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "on dgx-a100-80g+dgx-v100-32g tp=2 (1 dgx-a100-80g at 71%, 1 dgx-v100-32g at 29%)" in out.stdout
    assert out.stdout.count("split each layer unevenly between GPU types (HAP's sharding ratios)") == 3
    js = subprocess.run([*base, "--mixed-tp", "--json", "--quiet"], capture_output=True, text=True,
                        cwd=tmp_path, timeout=120)
    stages = json.loads(js.stdout)["plan"]["stages"]
    assert stages[0]["tp_shares"]["dgx-a100-80g"] == pytest.approx(312 / 437, abs=1e-4)
    used, usable = stages[0]["memory_gb_by_gpu"]["dgx-v100-32g"]
    assert used <= usable < 32 and f"{used:.2f}/{usable:.2f} GiB on dgx-v100-32g" in out.stdout
    assert "1f1b (tp shares dgx-a100-80g 71% / dgx-v100-32g 29%)" in out.stdout    # the runners-up too
    # a launcher searches only what it runs: no paired group
    megatron = subprocess.run([*base, "--mixed-tp", "--launcher", "megatron", "--json", "--quiet"],
                              capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert megatron.returncode == 0, megatron.stderr
    assert all("tp_shares" not in s for s in json.loads(megatron.stdout)["plan"]["stages"])
    (tmp_path / "eight.json").write_text(json.dumps({"groups": [   # 8 kinds: thousands of pairings
        {"preset": "dgx-a100-80g", "name": f"kind{k}", "nodes": 1, "memory_gib": 20 + 8 * k}
        for k in range(8)]}))
    (tmp_path / "twins.json").write_text(json.dumps({"groups": [    # two kinds under one name
        {"preset": "dgx-a100-80g", "nodes": 1}, {"preset": "dgx-a100-80g", "nodes": 1, "memory_gib": 40}]}))
    for argv, why in (([*base, "--mixed-tp", "--no-sp"], "need sequence parallelism"),
                      ([*base[:5], "dgx-a100-80g:2x8", *base[6:], "--mixed-tp"], "no two groups"),
                      ([*base[:5], "twins.json", *base[6:], "--mixed-tp"], "no two groups"),
                      ([*base[:5], "eight.json", *base[6:], "--mixed-tp"], "more than the 256 formations")):
        bad = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=120)
        assert bad.returncode == 2 and bad.stderr.startswith("yewpy: error: --mixed-tp: ")
        assert why in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("spec", ["dgx-a100-80g:1x8+dgx-a100-80g:1x8+dgx-v100-32g:1x8+dgx-v100-32g:1x8",
                                  "dgx-a100-80g:1x8+dgx-v100-32g:1x8+dgx-a100-80g:1x8+dgx-v100-32g:1x8"])
def test_identical_groups_listed_one_by_one_pair_once_with_the_same_plans(monkeypatch, spec):
    """Two A100 and two V100 nodes, each its own group (in either order): formations that differ
    only in which identical node they take are searched once (18 of 66), and the top 3 are those
    of every formation, over all shapes and over the paired ones alone (which lose here)."""
    import yewpy.apps.dnn.planner.shapes as shapes

    train = Training(64, 2048, mixed_tp=True)
    model = transformer("small", layers=4, hidden=4096, heads=32, vocab=32000, seq=1024)
    cluster = load_cluster(spec)
    once = [cls(model, cluster, train, top=3) for cls in (PlanSearch, PairedSearch)]
    found = [[t for t, _ in search.search().solutions] for search in once]
    assert paired_formations(cluster, train) == 18 and len(found[1]) == 3
    with monkeypatch.context() as patch:
        patch.setattr(shapes, "interchangeable", lambda groups, real: [])
        # each plan now comes up to 4 times (A100s and V100s swapped): the 12 best hold 3 distinct
        every = [cls(model, cluster, train, top=12) for cls in (PlanSearch, PairedSearch)]
        assert paired_formations(cluster, train) == 66 and len(every[0].shapes) > 3 * len(once[0].shapes)
        assert [sorted({t for t, _ in search.search().solutions})[:3] for search in every] == found


def test_groups_alike_but_for_a_name_another_kind_shares_are_not_interchanged(monkeypatch):
    """A100 "x", A100 "y" and V100 "x": only the second A100 pairs (one name never pairs), so the
    two A100s are not interchangeable for pairing, and the pair alone is still searched."""
    import yewpy.apps.dnn.planner.shapes as shapes

    cluster = Cluster([replace(A100, nodes=1, name="x"), replace(A100, nodes=1, name="y"),
                       replace(V100, nodes=1, name="x")])
    train = Training(64, 2048, mixed_tp=True)
    model = transformer("small", layers=4, hidden=4096, heads=32, vocab=32000, seq=1024)
    search = PlanSearch(model, cluster, train, rank=False)
    assert set(search.covers.values()) == {(1, 2)}
    formations = {tuple(p[0] for p in sh.parts) for sh in search.shapes}
    assert all((c,) in formations for c in search.covers)         # the pair alone, at every share
    assert paired_formations(cluster, train) == 2 * len(search.covers)
    with monkeypatch.context() as patch:
        patch.setattr(shapes, "interchangeable", lambda groups, real: [])
        assert paired_formations(cluster, train) == 2 * len(search.covers)


def test_three_and_three_identical_nodes_pair_where_they_were_refused():
    """3 + 3 single-node groups made more than 256 formations and were refused; 61 differ."""
    cluster = load_cluster("+".join(["dgx-a100-80g:1x8"] * 3 + ["dgx-v100-32g:1x8"] * 3))
    train = Training(64, 2048, mixed_tp=True)
    assert paired_formations(cluster, train) == 61
    model = transformer("small", layers=4, hidden=4096, heads=32, vocab=32000, seq=1024)
    paired = PlanSearch(model, cluster, train, top=3).search()
    plain = PlanSearch(model, cluster, replace(train, mixed_tp=False), top=3).search()
    assert paired.status == "optimal" and paired.objective <= plain.objective


def test_groups_that_cannot_pair_are_left_alone():
    """Pairs need one site, as many GPUs per node, and two different GPUs."""
    train = Training(64, 2048, mixed_tp=True)
    model = transformer("small", layers=4, hidden=4096, heads=32, vocab=32000, seq=1024)
    for spec in ("dgx-a100-80g:1x8+dgx-v100-32g:1x4", "dgx-a100-80g:1x8+dgx-a100-80g:1x8"):
        search = PlanSearch(model, load_cluster(spec), train, rank=False)
        assert not search.covers and len(search.cluster.groups) == 2
    search = PlanSearch(model, load_cluster("dgx-a100-80g:1x8+dgx-v100-32g:1x8+dgx-v100-16g:1x8"), train,
                        rank=False)
    assert sorted(set(search.covers.values())) == [(0, 1), (0, 2), (1, 2)]
    used = [[search.cluster.groups[p[0]] for p in sh.parts] for sh in search.shapes]
    for groups in used:         # no real group twice in one formation
        names = [n for g in groups for n in (dict(g.tp_shares) if g.tp_shares else {g.name: 1})]
        assert len(names) == len(set(names))


def test_a_pair_of_unequal_groups_leaves_the_larger_ones_other_nodes_as_a_group():
    """3 A100 nodes and 1 V100 node: one pair of a node each (at every share), and the other two
    A100 nodes as a group that formations take beside the pair or not; no formation uses more
    nodes of a kind than the cluster has, and the formations counted for the error message are
    the ones searched."""
    train = Training(64, 2048, mixed_tp=True)
    model = transformer("small", layers=4, hidden=4096, heads=32, vocab=32000, seq=1024)
    cluster = load_cluster("dgx-a100-80g:3x8+dgx-v100-32g:1x8")
    search = PlanSearch(model, cluster, train, rank=False)
    groups = search.cluster.groups
    shares = len(tp_share_choices(A100, V100, train))
    assert sorted(set(search.covers.values())) == [(0, 1)] and len(search.covers) == shares
    rest = groups[next(iter(search.rests.values()))]
    assert set(search.rests) == set(search.covers) and len(set(search.rests.values())) == 1
    assert (rest.name, rest.nodes, rest.tp_shares) == ("dgx-a100-80g", 2, ())
    assert all(groups[p].nodes == 1 for p in search.covers)
    formations = {tuple(sorted(p[0] for p in sh.parts)) for sh in search.shapes}
    paired = {f for f in formations if any(g in search.covers for g in f)}
    assert len(paired) == paired_formations(cluster, train) == 2 * shares
    assert any(search.rests[g] in f for f in paired for g in f if g in search.covers)
    for f in formations:
        nodes = {"dgx-a100-80g": 0, "dgx-v100-32g": 0}
        for g in f:
            for name, _ in groups[g].tp_shares or ((groups[g].name, 1),):
                nodes[name] += groups[g].nodes
        assert nodes["dgx-a100-80g"] <= 3 and nodes["dgx-v100-32g"] <= 1, f


def test_the_left_over_nodes_can_pipeline_with_the_pair_and_win():
    """An 8-layer GPT-3-width model on 3 A100 nodes and 1 V100 node whose links run at 150 GB/s per
    GPU: the best plan puts its first stage on the two A100 nodes the pair leaves over and the rest
    on the pair (measured: 9.769 against 9.892 s/iteration without pairing)."""
    model = transformer("wide", **{**WIDE, "layers": 8})
    train = Training(256, 2048, mixed_tp=True, precision="fp16")
    cluster = pair(nodes=3, gpus=8, network=150e9, second_nodes=1)
    search = PlanSearch(model, cluster, train)
    best = search.search()
    free = PlanSearch(model, cluster, replace(train, mixed_tp=False)).search()
    assert best.objective < 0.995 * free.objective
    stages = describe(search, best.solutions[0][1])["plan"]["stages"]
    assert [s["group"] for s in stages] == ["dgx-a100-80g", "dgx-a100-80g+dgx-v100-32g"]
    assert stages[0]["tp"] * stages[0]["dp"] == 16 and "tp_shares" in stages[1]
