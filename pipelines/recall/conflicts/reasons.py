"""Why two claims conflict: the reasons the rule gives, and what recall marks a corrected note with."""

from __future__ import annotations

# Two claims under one title whose contents do not compare: one may add to or update the
# other. Recall shows both, flagged; a write neither corrects nor holds the older for it.
MAY_UPDATE = "same title, may add or update"
# ... unless the newer one says something changed: then it updates the older.
CHANGED = "same title, the newer says it changed"
# A note a newer claim corrects in part (its `refines` link): shown, after the correction.
CORRECTED = "corrected"
DENIES = "same subject, one denies it"
SAME_SUBJECT = "same subject, different values"
# Close in meaning, and one says something changed ("I avoid gluten" / "I'm not gluten-free
# anymore", "My usual is an oat milk latte" / "... so my usual is a decaf americano now"):
# found only with the embeddings (recall), as the words need not compare.
CHANGED_CLOSE = "close in meaning, one says it changed"

REASONS = (None, "linked: contradicts", MAY_UPDATE, SAME_SUBJECT,
           "same subject, one says it ended", DENIES, CHANGED_CLOSE)
