"""Which log lines are one fault: headers, masking, event templates and ``group_by``.

``headers`` takes a line's header off (``learner`` learns it for ``format: auto``), ``tokens``
masks the values in the rest, ``drain`` mines event templates from the masked tokens,
``templates`` keeps them in the store under durable ids, and ``rules`` turns a log rule's
``group_by`` into what triage fingerprints. docs/GROUPING.md tells the whole story with
measurements.
"""
