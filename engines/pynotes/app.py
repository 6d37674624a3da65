"""The component module of the pynotes engine: what `componentize-py … componentize app` builds
(`cargo xtask build-engines` does it), serving `NotesEngine` through the kit's boundary."""

from notes_engine import NotesEngine
from tessera_engine.component import export

Guest = export(NotesEngine())
