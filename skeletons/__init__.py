"""Coordinations (search skeletons): Sequential, DepthBounded, Budget, and their work pools."""

from .coordination import Budget, Coordination, DepthBounded, Sequential, coordination
from .pool import DepthPool, DequePool

__all__ = ["Budget", "Coordination", "DepthBounded", "DepthPool", "DequePool", "Sequential", "coordination"]
