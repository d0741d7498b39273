"""Instruction-like text aimed at the assistant or at the memory.

A memory item states something about the world, the user or the project. Text that
instead *addresses the assistant* — overriding its instructions, giving it a new role,
dictating the words or shape of its reply, asking it to reveal or persist a prompt,
claiming a check was passed ("Access granted."), hiding an instruction in Base64 or binary,
or flooding it with adversarial padding — must never be stored, because everything in
memory is later re-injected into prompts. Style guidance inside an ordinary request
("structure your response as a list", a quoted sentence opener for a story) is not a
hijack and is let through.

Each rule is a general linguistic pattern (an overriding verb + an instruction noun with
an owner qualifier, a reply noun owned by "your", a role change introduced by "you are
now", ...). Trigger words alone never fire: "ignore the noise in the data" and "how do I
make git ignore a file" have no instruction noun. Patterns run over normalised text
(`text.normalise`) so zero-width splitting, full-width letters and look-alike letters do
not hide them. No pattern quotes a dataset string.

Modules, one job each:
- `find`         `find_injections`: every scan over one text, screened by one pass over a long one.
- `rules`        the rule table: `families` add their rules, built from `vocabulary`'s fragments.
- `anchors`      per family, literals one of which every rule needs; `screen` the one pass's layout.
- `mentions`     matches that are no order (negated, the writer's own, quoted as a mention).
- `encoded`, `obfuscation`  payloads decoded and words undone, scanned again (`rescan`).
- `flood`        adversarial padding; `homoglyphs` words mixing scripts.
- `hit`          the hit record.
"""

from pipelines.policy_rules.injection.find import find_injections, find_injections_normalised
from pipelines.policy_rules.injection.hit import InjectionHit
from pipelines.policy_rules.injection.homoglyphs import find_homoglyph_words

__all__ = ["InjectionHit", "find_homoglyph_words", "find_injections", "find_injections_normalised"]
