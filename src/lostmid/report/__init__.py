"""Human-readable outputs: figures (:mod:`lostmid.report.plots`) and one self-contained
HTML report (:mod:`lostmid.report.html`)."""
