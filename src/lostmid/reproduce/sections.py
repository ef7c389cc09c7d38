"""The sections of a reproduce run beside its core (the measured models against the
theory), in the order of their claims in ``claims.json`` and of their parts of the
report. A section is one :class:`lostmid.reproduce.plan.Section`; adding one is a module
that defines it and one entry here (docs/ARCHITECTURE.md).

>>> [section.key for section in SECTIONS]
['training', 'behaviour', 'remedies', 'dose', 'checkpoints', 'real_behaviour', 'real_remedies',
 'real_link']
"""

from __future__ import annotations

from lostmid.reproduce import (
    behaviour,
    checkpoints,
    dose,
    real_behaviour,
    real_link,
    real_remedies,
    remedies,
    training,
)
from lostmid.reproduce.plan import Section

SECTIONS: tuple[Section, ...] = (
    training.SECTION,
    behaviour.SECTION,
    remedies.SECTION,
    dose.SECTION,
    checkpoints.SECTION,
    real_behaviour.SECTION,
    real_remedies.SECTION,
    real_link.SECTION,
)
