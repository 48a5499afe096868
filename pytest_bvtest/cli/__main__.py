"""``python -m pytest_bvtest.cli``: the ``bvtest`` command."""

from pytest_bvtest.cli import main

raise SystemExit(main())
