"""Which proposals state the writer's own health, kept in their user scope by capture."""

from __future__ import annotations

import pytest

from pipelines.health_details import is_own_health_detail


@pytest.mark.parametrize("text", [
    "Medication. Priya takes metformin 500 mg twice a day.",
    "I take 20mg of sertraline every morning.",
    "My doctor says my blood pressure is fine now.",
    "Allergy. I'm allergic to penicillin.",
    "Sam was diagnosed with asthma last year.",
])
def test_a_writers_own_health_detail(text: str) -> None:
    assert is_own_health_detail(text, "sam" if "Sam" in text else "priya")


@pytest.mark.parametrize("text", [
    "Dr. Lee covers the clinic on Mondays.",            # a team note: no one's own health
    "Ana takes metformin 500 mg twice a day.",          # someone else's, written by priya
    "I go to the gym on Mondays.",                      # hers, not health
    "Mum's birthday is on August 14.",
])
def test_not_the_writers_health(text: str) -> None:
    assert not is_own_health_detail(text, "priya")
