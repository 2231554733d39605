"""The bundled applications; each module is a library class plus a CLI subcommand, registered
in the ``yewpy.apps`` entry-point group (pyproject.toml), as another package's apps are."""
