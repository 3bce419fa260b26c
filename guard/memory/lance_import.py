"""Import LanceDB without its REST namespace client's package start-up.

``import lancedb`` reaches ``lance_namespace``, which imports models from
``lance_namespace_urllib3_client``; that package's ``__init__`` also imports every REST API
class of a remote namespace server (generated code, each method wrapped by pydantic's
``validate_call``): about half of LanceDB's import, 1.3 of 2.6-3.0 s of CPU measured, paid at
every start of the memory helper. Guard keeps its table in a local folder and never speaks to
a namespace server, so the package is registered without running its ``__init__``; its
modules still import as they are used (``models`` is). If LanceDB ever needs more of it at
import, the stub goes and the import is done the ordinary way (keeping LanceDB's native
module, which cannot be loaded twice). Tests: ``tests/agent/test_memory_process.py``.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import Any

REST_CLIENT = "lance_namespace_urllib3_client"
NATIVE = "lancedb._lancedb"


def import_lancedb() -> Any:
    """``lancedb``, imported with the REST client's package registered but not initialised."""
    if "lancedb" in sys.modules:
        return sys.modules["lancedb"]
    stubbed = _stub_rest_client()
    try:
        import lancedb
    except (ImportError, AttributeError):
        if not stubbed:
            raise
        for name in [m for m in sys.modules if m == "lancedb" or m.startswith("lancedb.")]:
            if name != NATIVE:  # a native module cannot be initialised twice: it is kept
                del sys.modules[name]
        for name in [m for m in sys.modules if m.split(".")[0] in (REST_CLIENT, "lance_namespace")]:
            del sys.modules[name]
        import lancedb
    return lancedb


def _stub_rest_client() -> bool:
    if REST_CLIENT in sys.modules:
        return False
    spec = importlib.util.find_spec(REST_CLIENT)
    if spec is None or spec.submodule_search_locations is None:
        return False
    package = types.ModuleType(REST_CLIENT)
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    package.__file__ = spec.origin
    sys.modules[REST_CLIENT] = package
    return True
