"""``python -m evt_toolkit.cli`` runs ``evt``."""

from evt_toolkit.cli.app import main

raise SystemExit(main())
