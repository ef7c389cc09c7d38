"""Human-readable outputs: figures (:mod:`lostmid.report.plots`), one self-contained
HTML report (:mod:`lostmid.report.html`) and tables as CSV files beside their JSON
(:mod:`lostmid.report.tables`)."""
