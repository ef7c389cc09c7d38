"""The run machinery every long command shares, at the bottom of the package.

* :mod:`~lostmid.runs.store`: :class:`StageStore`, results saved as each stage finishes
  and reused by a rerun with the same configuration;
* :mod:`~lostmid.runs.backend`: :class:`Backend`, where work runs (``local`` or
  ``ray``), and Ray's set-up;
* :mod:`~lostmid.runs.jobs`: :class:`Job` (one named piece of work and the
  :class:`Resources` it asks for), :func:`execute_job` with retries, :func:`run_jobs`
  on either backend;
* :mod:`~lostmid.runs.stages`: :func:`run_stages`, the planned stages of one command
  run resumably on a backend, with progress.

It imports no capability package: ``reproduce``, ``remedies`` and ``sweep`` sit above
it and hand it their jobs.
"""
