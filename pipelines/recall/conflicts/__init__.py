"""The conflict rule: which claims disagree, and which of them a caller should be given.

Used by recall (at query time, over the candidates) and by `/v1/conflicts` (over everything
a caller may see), so both answer the same question the same way.

Two claims (types whose title names something asserted: fact, decision, preference, ...;
raw chat turns, summaries, pointers and todos are not claims) **conflict** when:

- one links to the other with `contradicts`; or
- they have the same normalised title and different content (`MAY_UPDATE`): one title may
  hold several notes ("Pepper: weighs 6 kg" / "Pepper: scared of thunder"), so unless the
  contents conflict by the rules below, neither is taken to correct the other: recall shows
  both, flagged, and a write replaces an older note under its title only when the new one
  says what changed (`CHANGED`: "ci moved to github actions, jenkins is gone"); or
- they are about the same subject and state different values. Same subject: the words
  before the first stated value agree ("Telemetry retention is 30 days" / "Telemetry
  retention is 90 days in orion"; an opener alone, "Thanks!", "Wow,", names none), or
  most of their non-value words are shared (the overlap coefficient of the smaller set,
  at least two words), or half of them when one names as replaced a value the other
  states, or says that what the other names changed ("Dinner with Priya got pushed back
  to Friday" / "I'm meeting Priya for dinner on Thursday"), or both count in one unit
  with different numbers ("4 spaces" / "2-space indentation"), or their embeddings are
  very close and half their words shared. Words are Snowball stems of their lemmas
  (simplemma: "ships" / "ship", "kept" / "keep") of
  the content and the title (the title names the subject: "Ship date" / "Release date");
  a name is a word too ("the API", "Python"). Values: numbers and times (with their unit word, as a stem: "4
  spaces" is "4-space"; a duration or a size in its base unit: "30 minutes" and "0.5 hours"
  are one value, "30 minutes" and "2 hours" count in one unit; a time of day in 24 hours: "11am",
  "11 a.m." and "11:00" are one time), dates (ISO, or with their month: "March 3, 2027" is
  2027-03-03, and states its day of the month, "3 march", as "Mar 3" and "the 3rd of March"
  without a year do), capitalised names inside a sentence ("two" is 2; what a number counts
  is the plural noun after a singular word naming its kind: "8 ingest workers" is "8
  worker"), and codes of words and a
  number ("eu-central-1", "ubuntu-22.04": one word, stating its family "eu" too, which it refines);
  not those the claim says it replaces or denies ("MySQL 8, replacing Postgres 16",
  "instead of", "no longer", "not", "no GraphQL"). Different values: both state some,
  and neither set contains the other (a claim that adds a value refines, not contradicts).
  Values stated in the titles name the subject: claims whose titles both state values,
  and different ones, are about different things; so are claims whose titles each name,
  and whose contents repeat, a word the other never says ("Auth service timeout: the auth
  service ..." / "Billing service timeout: the billing service ...").

- one denies what the other says (`DENIES`): "I'm not allergic to penicillin" / "I'm
  allergic to penicillin", "We don't deploy on Fridays" / "We deploy on Fridays": the same
  values (or none), most words shared, one negated ("not", "n't", "never", "no", "nobody",
  "nothing", ..., or saying it ended) and the other not, and what it negates is what the other says (most words of
  its clauses that negate, and of its title, are the other's: "Long time no see!" in a
  long chat turn denies nothing of "Good to see you!"); a negation that only retires a
  value ("REST, not GraphQL") denies nothing.

- one says something changed and the two are close in meaning (`CHANGED_CLOSE`: embedding
  cosine at least CHANGED_COSINE; "My usual is an oat milk latte" / "Doctor told me to cut
  caffeine, so my usual is a decaf americano now"), unless they say the same values (or one
  set holds the other's), one adds, or they are two things (values in the titles, what
  they measure, `_qualified_apart`). A write given the proposal's vector (`contradicted`'s
  `cosine_to`) reads the cosine too, across titles and when one says it changed.

A `supersedes` link is not a conflict but an answer to one: the superseded claim is never
given when the superseding one is visible. Nor is a `refines` link, a correction of one
detail of a note that says more (`corrects_in_part`): the note stays, marked `CORRECTED`,
shown after its correction.

**Resolution** of a group of conflicting claims:

1. Superseded members drop out; members a visible member corrects in part stay, `CORRECTED`.
2. Across scopes, the more specific scope applies (session > project > user > org): the
   broader members stay, ordered after it and marked as overridden (`scope`).
3. Within one scope: the higher confidence wins, then the newer (updated_at); members equal
   on both are ambiguous and all stay, flagged. A member competes only with those it
   conflicts with: two that agree, each contradicted by a third, both stand. Notes under one
   title that neither corrects (`MAY_UPDATE`) both stand, marked `related` (recall lists
   the newer first); a wish the newer restates (`_revises`) is corrected by it.

The package, by what each module does: `patterns` (the words and patterns read), `values`
(the values a text states), `claim` (what the rule reads of one item), `rule` (whether two
claims conflict), `table` and `pairs` (the rule over many claims at once), `resolution`
(groups and who wins), `turns` (raw turns that restate a retracted or corrected claim),
`correcting` (what a write corrects), `reasons` (the reasons given). Every name stays
importable from the package, as it was from the one module this was.
"""

from pipelines.records import RETIRED_BY_USER  # read here by callers, as the one module this was had it

from .claim import (
    _CLAIMS,
    _CLAIMS_MAX,
    _PACKED,
    CLAIM_TYPES,
    DATED_TYPES,
    ENDED_MIN_WORDS,
    Claim,
    _apposed,
    _denied,
    _ended,
    _links,
    _named,
    _pack,
    _read_claim,
    _title_words,
    _unpack,
    authors,
    is_claim,
    read_claim,
    replace_content,
    speaker,
)
from .correcting import (
    _DETAIL,
    Corrections,
    CosineTo,
    contradicted,
    corrected,
    corrected_by,
    corrections,
    corrects_in_part,
    proposed_claim,
    retired_by_evidence,
)
from .pairs import (
    DENSE_MAX_WORK,
    DENSE_WORDS_MAX_CELLS,
    FEW_PAIRS,
    GRAM_MAX_ROWS,
    MAX_BUCKET,
    PAIR_BLOCK,
    VectorOf,
    VectorsOf,
    _block,
    _claims_of,
    _close,
    _cosine,
    _denies_said_rows,
    _dense_columns,
    _ended_rows,
    _Lacking,
    _lacks,
    _linked,
    _Pairs,
    _pairs,
    _qualified_apart_rows,
    _replaced,
    _says_changed_rows,
    _shared_counts,
    _table,
    find_conflicts,
)
from .patterns import (
    _ABBREVIATED,
    _ADDS,
    _APPOSED,
    _CHANGED,
    _CLAUSE,
    _CLOCK,
    _CLOCK_RANGE,
    _CLOCK_UNITS,
    _CODE,
    _CONJOINED,
    _COUNTED,
    _DATE,
    _DAY,
    _DIGIT,
    _ENDED,
    _ENDED_TIME_WORDS,
    _ENDED_WHEN,
    _FIRST_PERSON,
    _LIGHT_VERBS,
    _MEASURED,
    _MOVED_IN_TIME,
    _MOVED_TO,
    _NAME,
    _NAMED_FORM,
    _NAMED_NUMBER,
    _NOT_NEGATING,
    _NOT_UNITS,
    _NUMBER,
    _NUMBER_WORD,
    _NUMBER_WORDS,
    _OWNER,
    _PART_OF,
    _PLAIN_NUMBER,
    _POSSESSIVE,
    _RANGE,
    _RESCHEDULED,
    _RETIRED,
    _RETIRING_WORDS,
    _SENTENCE_START,
    _STEMS,
    _TENTATIVE,
    _UNIT_SPLIT,
    _VOCATIVE,
    _WHEN_NAMES,
    _WRITTEN_WORD,
    _YEARLESS_DATE,
    MONTH_STEMS,
    NEGATION,
    UNIT_SCALE,
    _common_words,
    _first_names,
    _not_qualifiers,
)
from .reasons import CHANGED, CHANGED_CLOSE, CORRECTED, DENIES, MAY_UPDATE, REASONS, SAME_SUBJECT
from .resolution import (
    Outcome,
    _beside_under_one_title,
    _components,
    _resolve_one_scope,
    groups,
    groups_in,
    groups_with_pairs,
    resolve,
    titles_may_stand_apart,
)
from .rule import (
    CHANGED_COSINE,
    RETIRED_SUBJECT_OVERLAP,
    RETIRING_SUBJECT_OVERLAP,
    SUBJECT_COSINE,
    SUBJECT_OVERLAP,
    WISH_HEAD,
    Cosine,
    _comparable,
    _content_reason,
    _counted_alike_across_scopes,
    _denies,
    _denies_said,
    _ends,
    _may_have_changed,
    _moved_within,
    _moves,
    _overlap,
    _qualified_apart,
    _retires,
    _revises,
    _same_subject,
    _says_changed,
    _subject_within,
    _two_items,
    _unit_differs,
    _updates,
    _values_disagree,
    conflict_reason,
    names_a_case,
    of_two_people,
    own_words_apart,
    says_the_same,
    supersedes,
)
from .table import (
    _GATHERED,
    CHANGES,
    CODES,
    ID,
    KIND,
    LINKED,
    OF_WRITER,
    SAYS_CHANGED,
    SPEAKER,
    ClaimTable,
    _codes,
    _Columns,
    _Gathered,
    _keys,
    _renumber,
    _Rows,
)
from .turns import _light_or_period, _user_named, restates, states_what_was_corrected
from .values import (
    MONTH_DATE_PATTERNS,
    _blank_vocative,
    _clock_time,
    _counted,
    _counted_noun,
    _date_words,
    _day_of_month,
    _iso,
    _measured,
    _measures,
    _month_day,
    _named_numbers,
    _number_with_unit,
    _stance,
    _times,
    _unaddressed,
    _unaddressed_values,
    _unit_words,
    _units,
    _value_kinds,
    _value_stems,
    _value_words,
    _values,
    absences_ended,
    reschedules,
    retired_values,
    stated_values,
)

__all__ = ["CLAIM_TYPES", "Claim", "CosineTo", "Outcome", "absences_ended", "conflict_reason", "contradicted",
           "corrected", "corrected_by", "find_conflicts", "groups", "groups_with_pairs", "is_claim", "names_a_case",
           "of_two_people", "proposed_claim", "read_claim", "reschedules", "resolve", "restates", "stated_values",
           "states_what_was_corrected", "supersedes"]
