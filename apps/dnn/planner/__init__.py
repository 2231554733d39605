"""The parallelism planner.

- ``search``: the branch-and-bound plan search, with its concepts in mixins beside it: the shapes
  (``shapes``), what a stage costs (``stage_costs``), the lower bounds (``bounds``), the seed
  (``seed``) and the dominance memo (``dominance``);
- ``shares``: how heterogeneous replicas share micro-batches; ``pareto``: the stage option filters;
- ``describe``: the plan as users read it; ``launch``: what launchers run;
- ``adagrouper``: kFkB per network condition; ``treecount``: the exact size of the exhaustive tree.

Shared pieces (models, clusters, the cost model) sit beside it in ``apps/dnn``."""

from yewpy.apps.dnn.planner.describe import describe
from yewpy.apps.dnn.planner.search import ExhaustivePlanSearch, PlanSearch
from yewpy.apps.dnn.planner.shapes import MAX_PAIRED_FORMATIONS, Shape, heads_not_divided, paired_formations
from yewpy.apps.dnn.planner.shares import integer_shares, water_fill

__all__ = ["MAX_PAIRED_FORMATIONS", "ExhaustivePlanSearch", "PlanSearch", "Shape", "describe",
           "heads_not_divided", "integer_shares", "paired_formations", "water_fill"]
