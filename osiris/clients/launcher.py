"""How a client starts OSIRIS for a hook or a wrapped shell command.

With this interpreter: ``PYTHON -S -P …/osiris/launch.py hook|run …`` (:mod:`osiris.launch`:
no ``site``, a bare Python start-up). With another interpreter (``osiris install
--python``), whose ``osiris`` may live elsewhere: ``PYTHON -m osiris hook|run …``.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from osiris.core.routing import OSIRIS_COMMAND

LAUNCH_SCRIPT = Path(__file__).resolve().parent.parent / "launch.py"
OWN_COMMAND = OSIRIS_COMMAND
"""What every command these words start contains (``hook`` or ``run`` in its group)."""


def launch_words(python: str) -> list[str]:
    """The shell-quoted words before ``hook``/``run``."""
    if Path(python) == Path(sys.executable) and LAUNCH_SCRIPT.is_file():
        return [shlex.quote(python), "-S", "-P", shlex.quote(str(LAUNCH_SCRIPT))]
    return [shlex.quote(python), "-m", "osiris"]


def launch_argv(python: str, *args: str) -> list[str]:
    """The same as an argument list (no shell): the benchmark times what clients run."""
    return [shlex.split(word)[0] for word in launch_words(python)] + list(args)
