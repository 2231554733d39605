"""``python -m yewpy``: the same as the ``yewpy`` command."""

from yewpy.cli import main

raise SystemExit(main())
