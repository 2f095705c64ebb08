"""``upwatch import``: another monitoring tool's configuration as an Upwatch config file
(docs/config-as-code.md) and a report of what became of each object (docs/migrating.md).

Nothing is sent anywhere: the file is applied with ``upwatch apply``, which shows its plan.

A source is one module of this package that declares ``SOURCE``, a ``source.Source``::

    def read(paths: Sequence[Path]) -> Imported: ...

    SOURCE = Source(name="gatus", label="Gatus", expects="its config.yaml", read=read)

``read`` gets the SOURCE arguments (exactly one unless ``many=True``; each exists) and returns
an ``output.Imported``: for each object of the source, ``imported.item(kind, name)`` is its
report line; ``imported.key(kind, name)`` a key for its entry; ``imported.secret(item, kind,
key, field, value)`` the ``{env: NAME}`` to write in place of a secret; ``item.approximate(how)``
or ``item.skip(why)`` what did not carry over as it was; ``imported.add(kind, entry, item)``
the entry, in the API's create shape with its key. Input it cannot read raises
``source.SourceError`` naming what was expected. Entries the API would refuse are skipped with
its reason when the file is made, so a source needs no copy of the API's rules.

``registry.SOURCES`` finds the modules; the CLI's ``--from`` choices are checked against it.
"""
