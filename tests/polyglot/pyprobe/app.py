"""The component module of the pyprobe test engine."""

from probe_engine import ProbeEngine
from tessera_engine.component import export

Guest = export(ProbeEngine())
