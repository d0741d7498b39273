"""The words and patterns the conflict rule reads claims with: values, endings, changes, denials, names."""

from __future__ import annotations

import re
from functools import cache

from ..dates import _DAY_MONTH, MONTHS
from ..lexical import STOPWORDS, Stems

# The leading lookaheads only skip, cheaply, positions where no value can start; a digit
# after a dot, a colon or a hyphen continues a code, a version or a time ("ubuntu-22.04",
# "v2.3", "20:00"), it starts no number.
_NUMBER = re.compile(r"(?=\d)(?<![\w.:-])\d+(?:[.,:]\d+)*(?:(?:\s*|-)(?:%|[a-z]+))?", re.IGNORECASE)
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_NAME = re.compile(r"(?=[A-Z])(?:(?<![.!?]\s)(?<!^)\b[A-Z][\w-]*[A-Z0-9][\w-]*\b|(?<=[a-z,;:]\s)[A-Z][\w-]+)")
_DIGIT = re.compile(r"\d")
# Code written inline ("run the tests with `pytest -n auto`"): one value as written, a
# command, a flag or a file name, read whole (its words, dashes and digits are no count).
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
# A code of words and a number joined by hyphens ("eu-central-1", "us-east-1", "n2-standard-4"):
# one value, as a name is, though written lower-case (its number alone is no count: `_NUMBER`
# skips a digit after a hyphen).
# A number after its dots is a part of the code ("ubuntu-22.04": one value, not "ubuntu-22" and "04").
_CODE = re.compile(r"(?<![\w.-])[a-z][a-z\d]*(?:-[a-z][a-z\d]*)*-\d[a-z\d]*(?:\.\d[a-z\d]*)*(?![\w-])",
                   re.IGNORECASE)
_RANGE = re.compile(r"(?<![\w.:-])(\d+(?:[.,]\d+)?)\s*(?:-|–|to)\s*(\d+(?:[.,]\d+)?)\s*(%|[a-z]+\b)", re.IGNORECASE)
_CLOCK_UNITS = frozenset({"am", "pm", "o'clock", "h"})  # "8 pm" is a time, as "20:00" is
# A time of day with its half of the day ("11am", "11 a.m.", "2:30 PM", "9-11am", "8am-8pm": both ends):
# read as the 24-hour time it is ("11:00", "14:30"), so "11am" and "11:00" are one value and
# "11am" no bare number 11 ("am" is a stopword). Not after a digit, a dot or a colon.
# Two clock times joined by a dash ("08:00-10:00"): both ends, as "08:00 and 10:00" (a
# number after a hyphen is none, `_NUMBER`).
_CLOCK_RANGE = re.compile(r"(?<![\w.:])(\d{1,2}:\d\d)\s*[-–]\s*(?=\d{1,2}:\d\d(?![\d:]))")
_CLOCK = re.compile(r"(?<![\w.:])(?:(\d{1,2})(?:[:.](\d\d))?\s*(?:([ap])\.?\s?m\.?\s*)?(?:-|–|to)\s*)?"
                    r"(\d{1,2})(?:[:.](\d\d))?\s*(?:([ap])\.?\s?m\.?(?![\w'’])|o['’]clock\b)", re.IGNORECASE)
# A time of day said as a word ("at noon", "by midnight", "12 noon"): the clock time it is,
# so "standup at noon" and "standup at 10am" state two times (`values._unaddressed_values`).
_TIME_WORD = re.compile(r"(?<![\w-])(?:12\s*)?(noon|midday|midnight)(?![\w-])", re.IGNORECASE)
# "after noon" as a noun ("in the after noon", "every Saturday after noon", up to "noon") is the
# afternoon, no clock time; "deploys stop after noon" bounds them at 12:00 as "after 5pm" does.
AFTER_NOON_AS_A_NOUN = re.compile(r"\b(?:the|this|that|each|every|one|an?|\w+day)\s+after[\s-]*$", re.IGNORECASE)
TIME_WORDS = {"noon": "12:00", "midday": "12:00", "midnight": "0:00"}
# A number that says which one, not how many: after a word that picks one ("the", "our",
# "this") and before a singular noun, a version or a year ("the 4.2 release", "our 2027
# budget", "the 737 fleet"): part of what the claim is about (`claim._read_claim`), no count
# (`values.identifier_spans` decides the noun: not a unit, not plural). Two digits or one
# without a dot count ("the 3 engineers", "the 4 space indent").
_IDENTIFIER = re.compile(r"\b(?:the|this|that|our|my|your|their|its|his|her)\s+v?(\d+\.\d+(?:\.\d+)*|\d{3,})"
                         r"\s+([a-z]{3,})\b(?![-'’])", re.IGNORECASE)
# A noun before a version says which one too ("release 4.2", "version 3.2.1"): written in
# lower case, or opening its sentence as a common word (`_common_words`: "Release 4.2 ships
# Friday"; a name before one is `_NAMED_NUMBER`'s: "Python 3.11"); `values.identifiers`
# decides the noun. Not a measure: "weigh 72.5 kg" (group 3, a unit).
_NUMBERED = re.compile(r"\b([A-Za-z][a-z]{2,})\s+v?(\d+\.\d+(?:\.\d+)*)(?!\w|\.\d)(?:\s*([a-z]+))?")
_UNIT_SPLIT = re.compile(r"([\d.:]+)[\s-]*(.*)")  # "2-space" is "2 space"
# Words that say how much or how surely, not what ("I really like it", "a lot of tea",
# "the deadline is actually Friday"): no words of a claim's subject, as stopwords are not.
CLAIM_STOPWORDS = STOPWORDS | frozenset({"really", "lot", "lots", "actually", "literally", "basically", "totally",
                                         "truly", "honestly", "definitely", "certainly", "absolutely"})
# A clock time's word after it is a time zone, or none ("11:00 UTC"; not "11:00 daily").
_TIME_ZONES = frozenset("utc gmt z cet cest eet eest wet bst ist jst kst sgt hkt aest aedt acst awst nzst nzdt "
                        "est edt cst cdt mst mdt pst pdt akst hst et ct mt pt".split())
_NOT_UNITS = STOPWORDS | {"every", "per", "than", "more", "less", "or", "instead", "rather", "replacing", "since",
                          "till", "unless", "via", "without", "yet", "still", "already"}
# A name right before a bare number is what the number counts ("Python 3.11", "Node 18"): a
# version, read as a number with a unit, so "Python 3.12" differs from it in one unit.
_NAMED_NUMBER = re.compile(r"\b([A-Z][\w-]*)\s+v?$")
# A clause saying something ended ("we no longer have a staging environment", "the newsletter
# was discontinued"): what it names ended, and a claim stating that thing as current conflicts
# with it though neither states a value. "dropped to 50%" is a change, not an end; "sunset"
# only as a verb ("the v1 API was sunset"; not "photos at sunset").
_ENDED = re.compile(r"\b(?:no\s+longer|discontinued|stopped|removed|cancell?ed|retired|abandoned|"
                    r"(?:shut|turned|switched)\s+(?:down|off)|decommissioned|deprecated|closed|sold|"
                    r"sunsetted|archived|(?:been|being|be|was|were|is|are|got|get)\s+sunset|got\s+rid\s+of|"
                    r"dropped(?!\s+(?:to|by|from)\b))\b", re.IGNORECASE)
# An absence and the return that ends it, by where one is back: at work ("I'm back in the
# office from Monday", "back from parental leave" / "I work remotely", "on leave", "off
# sick", "out of office") or home ("back home" / "abroad", "away", "travelling"). A claim
# that its one is back ends a claim that they are away from there, under any title; the
# words last say what to look for among stored claims (`values.absences_ended`).
_LEAVE = r"(?:\w+\s+)?(?:leave|holiday|vacation|sabbatical)"
ABSENCES = tuple((re.compile(back, re.IGNORECASE), re.compile(away, re.IGNORECASE), said) for back, away, said in (
    (rf"\b(?:back|return(?:s|ed|ing)?)\s+(?:(?:in|at|to)\s+(?:the\s+|my\s+)?(?:office|work|desk)|from\s+{_LEAVE})\b",
     rf"\b(?:remote(?:ly)?|(?:work(?:s|ing)?|based)\s+from\s+home|wfh|on\s+{_LEAVE}|off\s+sick|"
     r"out\s+of\s+(?:the\s+)?office)\b", "remote remotely home wfh leave holiday vacation sabbatical sick"),
    (r"\b(?:back|return(?:s|ed|ing)?)\s+(?:home|from\s+(?:abroad|(?:\w+\s+)?trip|travell?ing))\b",
     r"\b(?:abroad|away|travell?ing|on\s+(?:a\s+)?(?:\w+\s+)?trip)\b", "abroad away travelling traveling trip"),
))
# Being where each absence of `ABSENCES` is away from (by its index; None: not read), and
# the words to look for it by: at work ("I commute to the office daily", "I'm in the office
# four days a week", "on-site"). A claim saying that its one is now away from there ("I work
# remotely now") ends it, as a return ends an absence (`rule._left`).
PRESENCES = ((re.compile(r"\b(?:commut(?:e|es|ed|ing)|(?:in|into|at|to)\s+(?:the\s+|our\s+|my\s+)?office|"
                         r"on[\s-]?site|in[\s-]person)\b", re.IGNORECASE), "office commute commutes commuting onsite"),
             None)
_CLAUSE = re.compile(r"(?:[^.;!?]|\.(?=\w))+")  # "3.8" and "node.js" do not end a clause
# Whom a sentence greets, thanks or answers ("Hey Gina, I had to shut down my bank account",
# "Thanks, Jon!", "Wow, Caroline, ...", "Sounds great, Mel!", "Glad I could help, Maria."): no
# value it states.
_VOCATIVE = re.compile(
    r"(?:^|(?<=[.!?]\s))(?:(?i:hey|hi|hello|thanks|thank\s+you|congrats|congratulations|dear|sorry|wow|whoa|yeah|"
    r"yes|yep|oh|ah|aw+|haha|omg|ok|okay|well|hmm|sure|cool|nice|awesome|great|bye|good\s+(?:morning|night|luck)|"
    r"see\s+ya)[\s,]+(?P<to>)|[A-Za-z][\w'’]*(?:\s+(?:I|[a-z][\w'’]*)){0,4},\s*)"
    r"(?P<name>(?:[A-Z][\w'’-]*\s*)+)(?=[,!.?]|$)")
# After the word that says it ended, a number or a date a preposition brings in says when
# ("IE11 support was dropped in the 5.0 release", "discontinued on March 3, 2026", "since v2").
_ENDED_WHEN = re.compile(r"\b(?:in|on|since|as\s+of|after|during|by)\s+(?:the\s+)?(?=v?\d|[A-Z][a-z]+\.?\s+\d)",
                         re.IGNORECASE)
# Words of such a clause that say when, not what ("discontinued last month").
_ENDED_TIME_WORDS = frozenset({"last", "month", "week", "year", "day", "ago", "recent", "recently", "yesterday",
                               "today", "now", "anymore", "ever", "earlier", "since", "already"})
# Verbs that say little before a value ("I take 50 mg of X", "we pay 40 euros for Y", "I
# have 2 cats"): words before the first value that are only these do not name the subject.
_LIGHT_VERBS = frozenset({"take", "takes", "took", "taking", "use", "uses", "used", "using", "pay", "pays", "paid",
                          "paying", "get", "gets", "got", "getting", "need", "needs", "needed", "want", "wants",
                          "eat", "eats", "drink", "drinks", "spend", "spends", "spent", "buy", "buys", "bought",
                          "keep", "keeps", "kept", "run", "runs", "ran", "like", "likes", "love", "loves", "make",
                          "makes", "made", "go", "goes", "went", "see", "sees", "saw", "give", "gives", "gave",
                          "put", "puts", "set", "sets", "add", "adds", "added"})
# A claim that says it adds ("I'm also allergic to shellfish", "GitHub Actions also runs the
# nightly suite", "... as well") is more of the subject, not a correction of what was said of it.
_ADDS = re.compile(r"\b(?:also|as\s+well|additionally|in\s+addition|besides)\b|\btoo(?=\s*(?:[.,;!?]|$))",
                   re.IGNORECASE)
# A claim that says something changed ("ci moved to github actions, jenkins is gone",
# "stopped drinking coffee"), under the title of an older claim whose content the value rule
# cannot compare with it, updates that claim rather than adding to it when it names
# something the older one said beyond the title (`Claim.changes`).
# A date or a time that changed: "slipped to Tuesday", "pushed back a week", "moved up",
# "is now on Thursday". "moved" and "now on/at/for" say so only before a time (`_A_TIME`; a
# standing day too, "moved the sync to Thursdays"; what moved, group "moved", is no word of the change):
# not "we moved to York", "moved everything to 1password", "from now on" (a standing
# change), "now on call", "now on version 3", "right now on my desk".
_MONTH_NAMES = "|".join(sorted(MONTHS, key=len, reverse=True))
_A_TIME = (r"(?:the\s+)?(?:\d{1,2}(?:[:.]\d\d|\s*(?:am|pm)\b|(?:st|nd|rd|th)\b|\s+(?:of\s+)?(?:"
           rf"{_MONTH_NAMES})\b)|\d{{4}}-\d\d|(?:mon|tues|wednes|thurs|fri|satur|sun)days?|today|tonight|tomorrow|noon|"
           rf"midnight|(?:next|this|coming|following)\s|(?:{_MONTH_NAMES})\b)")


def _inflected(*verbs: str) -> str:
    """An alternation of each verb's past, present and progressive forms ("move": moved,
    moves, moving; "switch": switched, switches, switching): a change said in the present
    ("The CLI moves from Postgres to SQLite", "we're switching off Jenkins") is read as one
    said in the past is. A one-syllable verb ending in one vowel and a consonant doubles
    it ("slip": slipped, slipping)."""
    forms = []
    for verb in verbs:
        if verb.endswith("e"):
            forms.append(rf"{verb[:-1]}(?:ed|es|ing)")
        elif re.fullmatch(r"[^aeiou]*[aeiou][bdgmnpt]", verb):
            forms.append(rf"{verb}(?:{verb[-1]}ed|s|{verb[-1]}ing)")
        else:
            forms.append(rf"{verb}(?:ed|{'es' if re.search('(?:ch|sh|ss|x|z)$', verb) else 's'}|ing)")
    return "|".join(forms)


_SHIFTED = _inflected("move", "push", "shift", "delay", "postpone", "reschedule", "bump", "slip") + "|slid(?:es|ing)?"
_MOVED_IN_TIME = (rf"slid|slipped|delayed|bumped|{_inflected('postpone', 'reschedule')}|brought\s+forward|put\s+off|"
                  r"pulled\s+(?:in|forward)|pushed\s+(?:to|out)|"
                  # "moved up", "pushed back" (not "pushed back on the design": an objection); said in the
                  # present, only before a time ("moving up to 9:30"; "keep pushing forward" perseveres)
                  r"(?:moved|pushed|shifted)\s+(?:up|back|forward)\b(?!\s+(?:on|against)\b)|"
                  rf"(?:{_SHIFTED})(?P<moved>(?:\s+(?!to\b|from\b)[^\s,;.!?]+){{0,4}}?)\s+(?:to|from|until|till)\s+{_A_TIME}|"
                  rf"(?<!\bfrom\s)now\s+(?:on|at|for)\s+{_A_TIME}")
# (the letters its words start with, asked first: most words start with none)
_RESCHEDULED = re.compile(rf"\b(?=[bdmnprs])(?:{_MOVED_IN_TIME})\b", re.IGNORECASE)
# A state that began anew or began ("I eat fish again", "started eating fish", "eats fish
# since March"): under the title of an older claim it may update (`rule._updates`), it says
# something changed as `_CHANGED` does. Read only there: across titles "again" and "since"
# say too little to make two claims one subject. Not "starts at 9" (a schedule), "started a
# pizza diary" (an event: what began is no doing), nor a past event done again (`_DONE_AGAIN`).
_BEGAN = re.compile(rf"\b(?:again|(?:started|began|begun)\s+(?:\w+ing|to\s+\w+)|since\s+{_A_TIME})\b",
                    re.IGNORECASE)
# One event done again, in the past ("went to the gym again", "we had pizza again", "ate fish
# again on Monday"): a past verb before "again" in its clause. What it tells of a standing
# habit or state is nothing changed.
_DONE_AGAIN = re.compile(r"\b(?:went|had|ate|drank|did|was|were|got|saw|made|took|came|ran|met|bought|"
                         r"\w{3,}ed)\b[^.;!?]*?\bagain\b", re.IGNORECASE)
# A habit ("at 6am on weekdays", "every Monday", "daily") and a stand-in for one occasion
# ("This week I'm going at 7pm instead", "today it's at 11", "On Dec 24 support closes at
# 2pm"): the stand-in holds beside the habit, it does not move it (`rule.stands_in`;
# `validity` reads the stand-in's window).
_HABIT = re.compile(r"\b(?:every|each|daily|weekly|monthly|weekdays|weekends|"
                    r"(?:mon|tues|wednes|thurs|fri|satur|sun)days)\b", re.IGNORECASE)
_ONE_OCCASION = re.compile(
    r"\b(?:this\s+(?:week(?:end)?|time|once)|just\s+(?:this\s+)?once|today|tonight|"
    rf"on\s+(?:the\s+)?\d{{1,2}}(?:st|nd|rd|th)?(?:\s+of)?\s+(?:{_MONTH_NAMES})|on\s+(?:{_MONTH_NAMES})\.?\s+\d{{1,2}}(?!\d)|"
    r"on\s+the\s+\d{1,2}(?:st|nd|rd|th))\b", re.IGNORECASE)
# When a state began, not what it is: "since March", "as of the 3rd of May", "since March
# 2026" (read apart from the values a claim states, `rule._updates`).
_SINCE_WHEN = re.compile(rf"\b(?:since|as\s+of)\s+{_A_TIME}(?:\s+of\s+(?:{_MONTH_NAMES})\b)?"
                         rf"(?:\s*\d{{1,2}}(?:st|nd|rd|th)?\b)?(?:,?\s*\d{{4}}\b)?",
                         re.IGNORECASE)
# "two approvals" states the value "3 approvals" contradicts ("one" is left out: mostly a
# pronoun, and "cached for one hour" / "at the CDN: one day" read as two rules, not one).
_NUMBER_WORDS = {w: str(n) for n, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split()) if w != "one"}
_NUMBER_WORD = re.compile(r"(?<!-)\b(?:" + "|".join(_NUMBER_WORDS) + r")\b(?!-)", re.IGNORECASE)
_MOVING = _inflected("move", "migrate", "switch", "port")
# A move off something, with or without what it moved onto ("we moved the builds off
# Jenkins", "migrated away from Heroku"), says that what was said of it changed; so does a
# move to a count ("we moved to 3-week sprints"; not "we moved to York": `_RESCHEDULED` reads
# a move to a time).
_MOVED_TO_A_COUNT = rf"moved\s+(?:over\s+)?to\s+(?:an?\s+)?(?=\d|(?:{'|'.join(_NUMBER_WORDS)})\b)"
_CHANGED = re.compile(
    r"\b(?:now|any\s*more|no\s+(?:longer|more)|stopped|quit|gave\s+up|given\s+up|switched|changed|"
    r"migrated|replaced|renamed|upgraded|downgraded|sold|retired|dropped|(?:is|are)\s+gone|instead|"
    r"went\s+(?:up|down)|raised|lowered|increased|decreased|upped|reduced|expired|cancell?ed|ended|became|"
    rf"(?:{_MOVING})(?:\s+(?!to\b|from\b)[\w'’-]+){{0,4}}?\s+(?:off|away\s+from)\b|"
    # "moved from X to Y": the move's verb alone, what moved and what it left stay words of the claim
    rf"(?:{_MOVING}|{_inflected('change')})(?=(?:\s+(?!to\b|from\b)[\w'’-]+){{0,4}}?\s+from\s+[^.;,!?]+?\s+(?:on)?to\b)|"
    rf"(?=[bdmnprs])(?:{_MOVED_IN_TIME})|{_MOVED_TO_A_COUNT})\b",
    re.IGNORECASE)
# A sentence that opens by saying the speaker corrects what was said ("Actually our sprints
# are three weeks", "I was wrong earlier - ...", "Correction: it's UA 828", "Scratch that,
# ..."): it says something changed, as `_CHANGED` does (`Claim.changes`), though no word of
# it names the change. Only as an opener ("Turns out ...", "Oops, ..."), or after the verb
# that states what is so ("the deadline is actually Friday", "it was actually Ben"): "I
# actually love it" corrects nothing.
CORRECTING = re.compile(
    r"(?:^|(?<=[.;!?]\s))\s*(?:actually\b|correction\s*:|scratch\s+that\b|i\s+stand\s+corrected\b|"
    r"i\s+(?:was|am|['’]m)\s+wrong\b|i\s+misspoke\b|my\s+(?:mistake|bad)\b|(?:it\s+)?turn(?:s|ed)\s+out\b|"
    r"(?:oops|whoops|woops)\b)"
    r"|\b(?:is|are|was|were|['’]s|['’]re)\s+actually\b", re.IGNORECASE)
# A phrase of a sentence: up to a comma, a dash, "and" or "but" ("cancelled netflix,
# we only have disney+ now"; "Dancing makes me so happy, and now I get to share that"): what
# one change word is said of (`rule.says_it_changed`). "3.11" and "1,000" end none.
_PHRASE = re.compile(r"(?:(?!\s(?:and|but)\s)(?:[^,–—-]|,(?=\d)|-(?!\s)|(?<!\s)-))+", re.IGNORECASE)
# A negation right before a change word, or one word before it, denies the change ("I won't
# quit", "Don't ever quit", "didn't change"; `rule._denied_change`).
_NEGATED_BEFORE = re.compile(r"(?:\b(?:not|never|no)|n[’']t)\s+(?:[\w'’]+\s+)?$", re.IGNORECASE)
# "50 mg of sertraline", "200 grams of kibble", "two cups of coffee": the word after "of"
# is what the number measures, so a claim measuring another thing is about another subject.
_MEASURED = re.compile(r"(?<![\w.])\d[\d.,:]*(?:\s*|-)[a-z%$€£]+\s+of\s+(?:(?:the|my|our|his|her|their|your)\s+)?"
                       r"([a-z][\w-]*)", re.IGNORECASE)
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+)([A-Z][\w-]*)")
_TITLES = "Dr|Mr|Mrs|Ms|Mx|Prof|St|Rev|Sgt|Capt|Lt|Col|Gen"  # written before a name
# An honorific's full stop ends no sentence ("Dr. Patel"); a short name's does ("We adopted Max. Max eats ...").
_ABBREVIATED = re.compile(rf"\b(?:{_TITLES}|Jr|Sr)\.\s+$")
# A title before a name ("Dr. Okafor is our family doctor", "is Dr. Patel"): the name is
# the value, not "Dr", and the title's full stop starts no sentence (`values._values`).
_HONORIFIC = re.compile(rf"\b({_TITLES})\.\s+(?=[A-Z])")
_POSSESSIVE = re.compile(r"['’]s\b")  # "Mom's birthday"
_OWNER = re.compile(r"\b([A-Za-z][\w-]*)['’]s\b")  # "the design team's standup"
_FIRST_PERSON = frozenset({"i", "my", "me", "mine", "we", "our", "us"})
# A name a possessive names, or sets beside what it names ("Our CI is CircleCI", "My sister
# Lena is vegan", "our dog Biscuit's food", "my friend, Tom,"): what the claim is about, a
# subject word as "sister" is, not a value it states ("Lena is not vegan" denies it). Not a
# day or a month ("our standup Tuesday").
_APPOSED = re.compile(r"\b(?i:my|our|his|her|their|your)\s+(?:([a-z][\w-]*),?\s+)?([A-Z][\w-]*)\b")
_NAMED_FORM = re.compile(r"[A-Z][a-z]+")  # a name as a sentence starts with it: "Leo", not "CI", "GitHub"
# A negation ("I'm not allergic to penicillin", "we don't deploy on Fridays", "no force
# pushes"): a claim that says it of what another states without it denies it (`_denies`). One
# that only retires a value ("REST, not GraphQL") states the rest, and denies nothing.
NEGATION = re.compile(r"\b(?:not|never|no|cannot|nobody|none|nothing|neither|nor)\b|n[’']t\b", re.IGNORECASE)
# What negates nothing though it holds a negation word (NegEx's pseudo-negations): a tag
# question ("Nature is amazing, isn't it?"), an idiom ("can't wait for", "no matter what",
# "not only", "no doubt", "no problem").
_NOT_NEGATING = re.compile(
    r",\s*\w+n[’']t\s+(?:it|he|she|they|we|you|i|there|that|this)\s*\?|"
    r"\b(?:(?:cannot|can[’']t|couldn[’']t)\s+wait|no\s+(?:matter|doubt|problem|worries)|not\s+only|never\s+mind)\b",
    re.IGNORECASE)
# "and" / "but" right before a negation ("... and don't quit", "but we never"): what comes before is not denied.
_CONJOINED = re.compile(r"\b(?:and|but|or)\s+(?:(?:i|we|you|they|he|she|it)\s+)?\w*$", re.IGNORECASE)
# Words that only say a value is retired ("instead of", "replacing"): not the subject.
_RETIRING_WORDS = frozenset({"replacing", "replaces", "replaced", "instead", "rather", "longer", "formerly",
                             "previously", "anymore"})  # "not ... anymore" says "no longer"
# "replacing Postgres 16", "instead of 9:30", "no longer on port 8080": values a claim names
# only to retire them, up to the end of the clause (or "to" in "moved from 9:30 to 10:00",
# "we moved the orders service from PostgreSQL to CockroachDB": what moved may stand between;
# "off" / "onto" say it as "from" / "to" do: "moved log shipping off Papertrail onto Datadog").
_RETIRED = re.compile(
    r"\b(?:replac(?:ing|es|ed)|instead\s+of|in\s+place\s+of|rather\s+than|no(?:\s+longer)?|not|formerly|previously|"
    rf"(?:{_MOVING}|{_inflected('change', 'convert')}|went|goes)(?:\s+(?!to\b|from\b|off\b)[\w'’-]+){{0,4}}?\s+"
    r"(?:from|off|away\s+from))\b(?:`[^`\n]*`|[^.;,!?()]|[.,:]\d)*?(?=\s+(?:on|in)?to\s|[.,](?!\d)|[;!?()]|$)",
    re.IGNORECASE)
# Someone named as gone ("John Smith has left Acme", "Dana left the company"): their name
# is retired as a replaced value is (a contact, an owner), not the place they left.
_GONE = (r"(?-i:(?:[A-Z][\w'’-]*\s+){1,3})(?=(?:has|had|have)\s+(?:now\s+|just\s+)?left\b|"
         r"left\s+(?:the\s+)?(?:company|team|firm|org(?:ani[sz]ation)?)\b)")
_RETIRED = re.compile(rf"{_RETIRED.pattern}|\b{_GONE}", re.IGNORECASE)

# A sentence that weighs an option states no value: "We're evaluating a move of the ledger
# service to Postgres, nothing decided" neither corrects nor contradicts "runs on MySQL 5.7".
_TENTATIVE = re.compile(
    r"(?:^|(?<=[.;!?]\s)|(?<=\n))[^.;!?\n]*\b(?:evaluating|considering|thinking\s+(?:about|of)|might|maybe|perhaps|"
    r"possibly|proposal|proposed|undecided|tentative(?:ly)?|nothing\s+(?:is\s+)?decided|not\s+(?:yet\s+)?decided)\b"
    r"[^.;!?\n]*(?:[.;!?]|$)", re.IGNORECASE)


# "the end of", "early", "mid-" before a date: which part of it, a word of the date
_PART_OF = re.compile(r"\b(?:(?:the\s+)?(?:end|start|beginning|middle)\s+of|early|late|mid)[\s-]*$", re.IGNORECASE)


# Words compare as the stems of their lemmas ("kept" / "keep", "ships" / "ship"); units are
# stems too: "4 spaces" is "4 space"
_STEMS = Stems(max_memo=200_000, lemmas=True)


@cache
def _not_qualifiers() -> frozenset[str]:
    """Words that date a claim, not qualify its subject (`names_a_case`); read at first use,
    as the lemmas' dictionary loads then (not when a command that reads no claim starts)."""
    return frozenset(_STEMS("new newer updated update current revised latest corrected correct actual "
                            "final now today old previous official".split()))


# Units of one dimension, by stem, as (base unit, factor): durations and sizes compare as one
# value ("200 ms" / "0.2 seconds"), and two of one dimension count in one unit ("30 minutes"
# / "2 hours"). Months and years are 30 and 365 days.
_DAY = 86_400
UNIT_SCALE = {
    **{u: ("second", f) for u, f in (("ms", 0.001), ("millisecond", 0.001), ("s", 1), ("sec", 1), ("second", 1),
                                      ("min", 60), ("minut", 60), ("h", 3600), ("hr", 3600), ("hrs", 3600),
                                      ("hour", 3600), ("day", _DAY), ("week", 7 * _DAY), ("month", 30 * _DAY),
                                      ("year", 365 * _DAY))},
    **{u: ("byte", f) for u, f in (("byte", 1), ("kb", 1e3), ("kilobyt", 1e3), ("kib", 2**10), ("mb", 1e6),
                                    ("megabyt", 1e6), ("mib", 2**20), ("gb", 1e9), ("gigabyt", 1e9),
                                    ("gib", 2**30), ("tb", 1e12), ("terabyt", 1e12), ("tib", 2**40))},
}
_PLAIN_NUMBER = re.compile(r"\d+(?:\.\d+)?")
# "14 March" without a year reads as "14 march" (a month's lemma is a month: "sept" is "september")
MONTH_STEMS = frozenset(Stems()(sorted(MONTHS)))
# A day of a month without a year ("Dec 24", "24 Dec", "December 24th", "the 24th of
# December"; `dates.written_dates` reads those with one): one value, the day and its month's
# full name ("24 decemb"), however the month is written. Not part of a number or a code.
_YEARLESS_DATE = re.compile(rf"(?<![\w.:,-])(?:{_DAY_MONTH})(?![\w-])", re.IGNORECASE)
_WHEN_NAMES = frozenset(MONTHS) | {f"{d}day" for d in ("mon", "tues", "wednes", "thurs", "fri", "satur", "sun")}


@cache
def _first_names() -> frozenset[str]:
    """zxcvbn's lists of first names (~4,700, lower-case)."""
    from zxcvbn.frequency_lists import FREQUENCY_LISTS
    return frozenset(FREQUENCY_LISTS["male_names"]) | frozenset(FREQUENCY_LISTS["female_names"])


@cache
def _common_words() -> frozenset[str]:
    """Common English words: zxcvbn's frequency lists of English Wikipedia and of US film and
    TV (~49,000 words, lower-case). zxcvbn keeps a word in one of its lists only, so some
    common words sit in its list of passwords instead ("coffee", "love") and read as names
    here, as pets' names do ("Pepper", "Biscuit")."""
    from zxcvbn.frequency_lists import FREQUENCY_LISTS
    return frozenset(FREQUENCY_LISTS["english_wikipedia"]) | frozenset(FREQUENCY_LISTS["us_tv_and_film"])


_MOVED_TO = frozenset(_STEMS(["next", "this", "coming", "following", "back", "forward", "out", "up", "now"]))


# What a count of a thing is in its compound ("8 ingest workers", "12 worker nodes"): after
# a number more than one, the noun counted is the plural one; a singular word before it says
# which kind ("ingest"), not the unit. Words of magnitude count nothing ("2 million users").
_MODIFIED_COUNT = re.compile(r"\s+([a-z]+)\b(?![-'’])", re.IGNORECASE)
_MAGNITUDES = frozenset({"hundred", "thousand", "million", "billion", "trillion", "k", "m", "bn", "dozen"})

# a count in a unit and what it counts, said as one: "2-space indentation", "30-day retention"
_COUNTED = re.compile(r"(?<![\w.])\d[\d.,]*[\s-]*([a-z]+)[\s-]+([a-z][\w-]*)", re.IGNORECASE)


_WRITTEN_WORD = re.compile(r"[\w'’-]+")
