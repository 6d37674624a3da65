"""The component module of the pyconformance test engine."""

from conformance_engine import ConformanceEngine
from tessera_engine.component import export

Guest = export(ConformanceEngine())
