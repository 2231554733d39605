# Kept so that cores written against yewpy < 0.2 (`from yewpy._engine cimport ...`) still build;
# the public contract is yewpy/core.pxd.
from yewpy.core cimport (KIND_DECISION, KIND_ENUMERATION, KIND_OPTIMISATION, Core, DecisionCore,
                         EnumerationCore, Kind, OptimisationCore)
