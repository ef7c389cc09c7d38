"""``lostmid retrieve``: accuracy by position on a model. Its options (``config``), the
length x position grids (``grid``), the pilots that place the task and learn the lead-in
(``calibrate``, ``pilot``), the job (``run``), its result and files (``result``) and
figures (``plot``)."""
