"""`first_person.of_the_writer`: whom a claim is about, read by grammar, not by the mere
presence of "me": the one told, asked or given to is the listener, not the subject."""

from __future__ import annotations

import pytest

from pipelines.first_person import of_the_writer


@pytest.mark.parametrize("text, writers", [
    ("I work from home on Fridays", True),
    ("My laptop is a MacBook", True),
    # the writer only as the one told: the claim is of whom the clause speaks
    ("He told me he'd be away next week", False),
    ("Maria told me that she is off on Friday", False),
    ("He mentioned to me that he'd be off", False),
    ("He called me to say he'd be late", False),  # "to say": his purpose, not the writer's task
    # ... unless the clause speaks of the writer
    ("He told me I should rest", True),
    ("Maria said my flight is at 6", True),
    ("He told me he'd be away; I'm off on Monday too", True),
    # asked to do something, the writer is who does it
    ("Remind me to call the dentist", True),
    ("Ann asked me to cover the on-call on Friday", True),
    # asks and requests of the listener: about the listener, or the thing asked for
    ("Tell me when you're free", False),
    ("Give me the report by Friday", False),
    ("Let me know when you land", False),
    ("Keep me posted on the migration", False),
    ("Tom emailed me the slides", False),
    # the writer acted on, or acting: still the writer's
    ("Let me check the logs", True),
    ("The dentist moved me to Thursday", True),
    # vouching, and what a group shares, as before
    ("I think the standup is at 10", False),
    ("He told me our release is on Friday", False),
])
def test_the_writer_told_is_the_listener_not_the_subject(text, writers):
    assert of_the_writer(text) is writers


@pytest.mark.parametrize("text, writers", [
    ("I deploy everything to us-east-1", True),  # "us" of a code is no group
    ("I run the ap-east-us-2 stack", True),
    ("I manage the US accounts", True),  # "US", the country
    ("The I-95 exit is closed", False),  # "I" of a code is no writer
    ("Tell us when I should start", False),
    ("I like team-wide lunches", False),
])
def test_a_pronoun_inside_a_code_or_the_country_is_nobody(text, writers):
    assert of_the_writer(text) is writers
