"""The script a client runs on every tool call: ``PYTHON -S -P …/osiris/launch.py hook
CLIENT EVENT`` (a command hook) or ``… launch.py run [OPTIONS] -- COMMAND`` (a shell
command that OSIRIS routes through ``osiris run``).

``-S`` skips ``site``: its ``.pth`` files and the path set-up cost more than the hook's
own work (measured in ``reports/PERF.md``). ``-P`` keeps this file's folder off
``sys.path``. So the folder that holds the ``osiris`` package goes first on the path
here, and the rest of the installation is added only by the code that needs it (the
hook's or the wrapper's path without a store owner:
:func:`osiris.clients.sitepath.full_path`). ``osiris
install`` writes these commands (:mod:`osiris.clients.launcher`); ``python -m osiris
hook|run`` does the same work with ``site`` loaded.
"""

import os
import sys


def _main() -> int:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    what, argv = sys.argv[1:2], sys.argv[2:]
    if what == ["hook"]:
        from osiris.clients.hook_entry import main as hook_main

        return hook_main(argv)
    if what == ["run"]:
        from osiris.clients.runner import main as run_main

        return run_main(argv)
    sys.stderr.write("usage: launch.py hook CLIENT EVENT | "
                     "launch.py run [OPTIONS] -- COMMAND\n")
    return 2


if __name__ == "__main__":
    sys.exit(_main())
