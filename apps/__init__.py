"""The bundled applications; each module is a library class plus a CLI subcommand."""

# subcommand -> module under yewpy.apps
APPS = {name: name for name in ("nqueens", "maxclique", "knapsack", "uts", "semigroups", "sip", "tsp")}
APPS.update({"dnn-plan": "dnn_plan", "fusion": "fusion"})
