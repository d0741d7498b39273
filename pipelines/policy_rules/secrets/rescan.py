"""Finding secrets again in what a layer decoded (`encoded`)."""

from __future__ import annotations

from pipelines.policy_rules.secrets.hit import SecretHit


def find_secrets(text: str) -> list[SecretHit]:
    """`find.find_secrets`, imported when called: `find` imports the layers that call this."""
    from pipelines.policy_rules.secrets.find import find_secrets

    return find_secrets(text)
