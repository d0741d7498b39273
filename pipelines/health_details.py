"""A writer's own health detail ("I take metformin 500 mg twice a day", "Priya was diagnosed
with asthma"): what capture keeps in the writer's user scope when the proposal names no scope,
so a teammate or partner sharing the project never recalls it (`capture._govern_proposal`).

Two things together: a health word (a medication, a dose, a diagnosis, a clinician, a
condition) and the writer as its subject (first person singular, or the writer's own user
id as a word). A team note that only names health words ("Dr. Lee covers the clinic on
Mondays") stays where it was proposed.
"""

from __future__ import annotations

import re

from pipelines.first_person import FIRST_PERSON_SINGULAR_WORD

_HEALTH_WORDS = (
    "medication|medications|medicine|medicines|meds|prescription|prescriptions|prescribed|dose|doses|dosage|"
    "tablet|tablets|pill|pills|capsule|capsules|inhaler|insulin|antibiotics?|antidepressants?|"
    "doctor|doctors|gp|physician|psychiatrist|psychologist|therapist|therapy|cardiologist|dermatologist|"
    "diagnosed|diagnosis|allergy|allergies|allergic|surgery|symptoms?|"
    "blood pressure|cholesterol|diabetes|diabetic|asthma|asthmatic|depression|anxiety|adhd|migraines?|epilepsy|"
    "pregnant|pregnancy|chemo|chemotherapy|cancer|hiv|thyroid|arthritis"
)
_HEALTH = re.compile(rf"\b(?:{_HEALTH_WORDS})\b|\b\d+(?:\.\d+)?\s*(?:mg|mcg|µg|ml|iu)\b", re.IGNORECASE)


def is_own_health_detail(text: str, user_id: str) -> bool:
    """Whether `text` states something of its writer's (`user_id`'s) health."""
    if not _HEALTH.search(text):
        return False
    if FIRST_PERSON_SINGULAR_WORD.search(text):
        return True
    return bool(user_id) and re.search(rf"\b{re.escape(user_id)}\b", text, re.IGNORECASE) is not None
