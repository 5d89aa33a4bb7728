"""Captures bigger than one process: several files read as one capture, and the decode split into shards
(by host pair, or a connection cut into time slices) that run the unchanged pipeline on a distributed
engine (rdmaspy.scale.parallel)."""
from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import RdmaspyError


def need(module: str, command: str) -> ModuleType:
    """Import a dependency of the scale extra, or say in one line how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise RdmaspyError(f"{command} needs {module.split('.')[0]}: pip install 'rdmaspy[scale]'") from None
