"""The depth dose-response: does the structure at birth shape the order of learning? The
rule and its verdict (``verdict``), the runs' readouts and their summary (``summary``),
``dose.json`` and ``dose.png`` from finished runs (``run``)."""
