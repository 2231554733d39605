"""The parallelism planner: the branch-and-bound plan search (``search``), how heterogeneous replicas
share micro-batches (``shares``), the stage option filters (``pareto``), the plan as users read it
(``describe``), what launchers run (``launch``), kFkB per network condition (``adagrouper``) and
the exact size of the exhaustive tree (``treecount``). Shared pieces (models, clusters, the cost
model) sit beside it in ``apps/dnn``."""

from yewpy.apps.dnn.planner.describe import describe
from yewpy.apps.dnn.planner.search import ExhaustivePlanSearch, PlanSearch, Shape, heads_not_divided
from yewpy.apps.dnn.planner.shares import integer_shares, water_fill

__all__ = ["ExhaustivePlanSearch", "PlanSearch", "Shape", "describe", "heads_not_divided", "integer_shares",
           "water_fill"]
