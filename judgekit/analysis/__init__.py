"""Analyses across runs and labels, on the floor of the methods: the estimate from
people's labels drawn by a known design (``source``, ``label_terms``,
``label_estimate``), choosing a judge (``choose``), juries and cascades (``jury``),
the judge card with its decisions (``card``, ``decisions``), and two runs compared on
the same items (``comparison``, ``paired``). They read what the
recorded readers and the run folders hold; ``report/`` renders what they return."""

__all__: list[str] = []
