"""Coordinations (search skeletons) and their work pools."""

from .coordination import Budget, Coordination, DepthBounded, Sequential, StackStealing, coordination, option
from .ordered import Ordered
from .pool import DepthPool, DequePool

__all__ = ["Budget", "Coordination", "DepthBounded", "DepthPool", "DequePool", "Ordered", "Sequential",
           "StackStealing", "coordination", "option"]
