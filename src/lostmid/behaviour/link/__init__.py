"""Structure and behaviour on the same prompts: does the gold span's influence on a
model's output say where it loses what it read?

For each example of RULER's multi-key needle at each depth (prompted as ``lostmid
retrieve`` prompts it: chat template and answer prefix), one record
(:func:`~lostmid.behaviour.link.example.link_example`): the greedy reply and its
correctness (the value in a ``budget``-token reply, retrieve's ``substring`` rule) and
the gold needle's reach on the answer (:func:`lostmid.influence.gold.gold_span_influence`):
its share of the gradient of the answer's log p w.r.t. the input embeddings, and its
share of measure's Jacobian norm ``||d h_L / d e_j||^2`` (``probes`` Rademacher probes).
The prompt is read once for both: the greedy reply goes on from the gradient pass's keys
and values (:func:`lostmid.behaviour.decoding.generate.greedy_from_cache`). The same
prompts through the random-init twin (seed 0) are the control: what the topology alone
gives the needle at each depth (``twin_per_depth`` examples: its effect spans decades, a
few resolve it).

* :mod:`~lostmid.behaviour.link.design`: a design (the model, the task's size and
  difficulty, the examples a depth) and when a saved run grows into another;
* :mod:`~lostmid.behaviour.link.example`: one example's prompt and record;
* :mod:`~lostmid.behaviour.link.run`: the resumable run in its folder (one JSON line an
  example in ``examples.jsonl``; a run with more examples a depth grows a finished one,
  an example being drawn by its seed, index and depth), ``link.json`` and ``link.png``;
* :mod:`~lostmid.behaviour.link.summary`: per depth accuracy and mean shares, the link
  rule (:func:`lostmid.stats.link.link_verdict`) on each share, the figure.

``lostmid reproduce --real-link`` runs it on real checkpoints and states its claim
(:mod:`lostmid.reproduce.real_link`).
"""
