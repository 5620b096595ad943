"""``python -m osiris.harness.large_home HOME --tasks N --events M``."""

from osiris.harness.large_home.build import main

raise SystemExit(main())
