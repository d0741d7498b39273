"""Detectors behind the write policy, one module per concern.

- `findings`  — the Finding record every detector returns, and redaction of excerpts.
- `text`      — normalisation (zero-width characters, look-alike letters) and entropy.
- `secrets`   — credentials: vendor token formats (detect-secrets plugins plus our own),
                keyword assignments, URL/header credentials, PEM keys, plain-sentence
                passwords and PINs, payment cards.
- `injection` — instruction-like text aimed at the assistant or at the memory itself.

`pipelines.policy` combines them into verdicts; nothing here knows about tiers or settings.
"""

from pipelines.policy_rules.findings import Finding, FindingKind
from pipelines.policy_rules.injection import find_injections
from pipelines.policy_rules.secrets import find_secrets

__all__ = ["Finding", "FindingKind", "find_injections", "find_secrets"]
