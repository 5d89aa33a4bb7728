"""The protocol dissectors: each module declares its fields and registers itself into the registry's
tables on import.  The data dissector, which takes the bytes nothing else does, is loaded with the package."""
from . import data  # noqa: F401
