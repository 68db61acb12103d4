"""The profile attributes of the synthetic generator: what a speaker can state, overturn and restate.

Life (:mod:`~memprm.data.synthetic.attributes_life`) then pastimes
(:mod:`~memprm.data.synthetic.attributes_pastimes`), in this order: the generator draws from them by position.
Template conventions are in :mod:`memprm.data.synthetic.vocabulary`.
"""

from __future__ import annotations

from memprm.data.synthetic.attributes_life import LIFE
from memprm.data.synthetic.attributes_pastimes import PASTIMES
from memprm.data.synthetic.vocabulary import Attribute

ATTRIBUTES: tuple[Attribute, ...] = LIFE + PASTIMES
