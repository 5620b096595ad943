"""``osiris-dashboard``, a read-only web page of what OSIRIS is doing:
:mod:`osiris.dashboard.app` (the Starlette app and its guard), ``views`` (routes and
pages), ``queries`` (what it reads), ``charts`` (inline SVG)."""

from __future__ import annotations

from osiris.dashboard.app import create_app, main

__all__ = ["create_app", "main"]
