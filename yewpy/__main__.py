"""``python -m yewpy``: the same as the ``yewpy`` command."""

from yewpy.tools.cli import main

raise SystemExit(main())
