"""``python -m osiris.harness.bench.large_home HOME --tasks N --events M``."""

from osiris.harness.bench.large_home.build import main

raise SystemExit(main())
