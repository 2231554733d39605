"""The bundled applications; each module is a library class plus a CLI subcommand."""

APPS = ("nqueens", "maxclique", "knapsack", "uts", "semigroups", "sip", "tsp")
