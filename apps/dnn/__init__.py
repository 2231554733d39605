"""DNN parallelism: model zoo, clusters, the symbolic cost model, the strategy planner, tensor fusion."""
