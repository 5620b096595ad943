"""The read side of the engine facade: what the dashboard and notebooks read a home with.

A reader is the store itself (``OSIRIS_STORE_OWNER=off``: each read opens the file under
the shared lock) or :class:`~osiris.engine.remote.ReadStore` (each read runs in the
home's store owner while agents keep writing). Both give ``read()``, a context of one
read-only DuckDB connection; :func:`fetch_row` and :func:`rows_as_dicts` read its
results.
"""

from __future__ import annotations

from typing import TypeAlias

from osiris.engine.remote import ReadStore
from osiris.store.db import fetch_row, rows_as_dicts
from osiris.store.state import Store

Reader: TypeAlias = Store | ReadStore
"""Anything the dashboard's queries and an audit read through."""

__all__ = ["ReadStore", "Reader", "Store", "fetch_row", "rows_as_dicts"]
