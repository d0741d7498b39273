"""Hits on values public by design: Mapbox public tokens, a JSON Web Key's public members,
JWTs their own line calls a documentation example.
"""

from __future__ import annotations

import re

from pipelines.policy_rules.secrets.hit import SecretHit

# A Mapbox public token: "pk." and a JWT-shaped body. Mapbox's public tokens are made to ship
# in web pages ("sk." tokens are its secret ones).
_MAPBOX_PUBLIC = "pk.eyJ"
# Words by which the writer says a JWT is a documentation example ("the sample token on
# jwt.io", "# example token for the tutorial"), in the token's line.
_EXAMPLE_JWT_CONTEXT = re.compile(
    r"(?i)jwt\.io|\b(?:example|sample|tutorial|docs|documentation|placeholder|dummy)\b"
)


_JWT_VALUE = re.compile(r"(?:Bearer\s+)?eyJ[\w-]+\.eyJ[\w-]+\.")


def _public_by_design(text: str, hit: SecretHit) -> bool:
    """A hit on a value that is public by design: a Mapbox public token (as a JWT or as the
    value of an access-token name), a public member of a JSON Web Key, or a JWT its own line
    calls a documentation example."""
    if text.startswith(_MAPBOX_PUBLIC, hit.start) or text.startswith(_MAPBOX_PUBLIC, max(0, hit.start - 3)):
        return True
    if _jwk_public_member(text, hit):
        return True
    if hit.rule_id != "hard.secret.jwt" and not _JWT_VALUE.match(text, hit.start, hit.end):
        return False  # (a JWT is also the value of an auth header or a token name)
    line_start = text.rfind("\n", 0, hit.start) + 1
    line_end = text.find("\n", hit.end)
    line = text[line_start:hit.start] + " " + text[hit.end:len(text) if line_end < 0 else line_end]
    return _EXAMPLE_JWT_CONTEXT.search(line) is not None


# RFC 7517/7518: a JSON Web Key's public members are "n" and "e" (RSA), "x" and "y" (EC, OKP);
# its private ones "d", "p", "q", "dp", "dq", "qi", "oth" and "k" (a symmetric key).
_JWK_PUBLIC_MEMBER = re.compile(r"[\"'](?:n|e|x|y)[\"'][ \t]*:[ \t]*[\"']$")
_JWK_PRIVATE_MEMBER = re.compile(r"[\"'](?:d|p|q|dp|dq|qi|oth|k)[\"'][ \t]*:")


def _jwk_public_member(text: str, hit: SecretHit) -> bool:
    """A random-looking run that is the modulus or a curve point of a JSON Web Key (a JWKS
    endpoint's `{"kty": "RSA", "n": ...}`) with no private member beside it: public key data."""
    if hit.rule_id != "hard.secret.high_entropy":
        return False
    if not _JWK_PUBLIC_MEMBER.search(text, max(0, hit.start - 12), hit.start):
        return False
    end = text.find("}", hit.end)
    key = text[text.rfind("{", 0, hit.start) : len(text) if end < 0 else end]
    return re.search(r"[\"']kty[\"']", key) is not None and _JWK_PRIVATE_MEMBER.search(key) is None
