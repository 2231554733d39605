"""An example yewpy plugin: the ``fibstrings`` app and the ``shallow`` coordination."""
