"""The rest of the installation on ``sys.path``, for a process started by
``osiris/launch.py`` (``python -S``: no ``site``) once it needs more than the standard
library and ``osiris``. Imports nothing: the hook's light path imports this module."""

import sys


def full_path() -> None:
    """The installed packages on ``sys.path`` (``site``'s work, done when a process
    started with ``-S`` needs more than the standard library and ``osiris``)."""
    if sys.flags.no_site:
        import site

        site.main()
