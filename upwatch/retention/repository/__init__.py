"""All of retention's SQL, one module per concept: ``claims`` (an owner's daily run),
``purge`` (measuring and deleting each data type), ``notices`` (announced batches) and
``storage`` (the figures usage.storage is made from). ``scope`` scopes every query to one
owner."""
