"""The governed write path: capture_turn, chat JSONL ingestion, LoCoMo import, the fold."""

import json
from pathlib import Path

import pytest

from pipelines.capture import capture_turn, kept_importance
from pipelines.inbox import Inbox
from pipelines.ingest import Owner, import_items_jsonl, ingest_chat_jsonl, ingest_locomo, parse_locomo_date
from pipelines.materialize import apply_patch, fold_events, message_item_id
from pipelines.policy import Policy
from pipelines.records import Event, Identity, MemoryItem, ProposedItem, Scope

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples" / "chats.jsonl"
DANA = Identity(user_id="dana", project_id="atlas", session_id="s1")


@pytest.fixture()
def inbox(tmp_path):
    with Inbox(tmp_path / "inbox.sqlite3") as ib:
        yield ib


def test_capture_lands_turn_and_governed_proposals(inbox):
    text = (
        "Sure.\n<MEMORY_PROPOSALS_JSON>[{\"type\": \"decision\", \"title\": \"DB choice\", "
        "\"content\": \"We use PostgreSQL 16.\", \"tags\": [\"db\"], \"why_store\": \"decision\"},"
        "{\"type\": \"fact\", \"title\": \"key\", \"content\": \"token ghp_R8xK2mQ9vL4tZ7wB1nC6yH3jF5dS0aPqEu2T\"}]"
        "</MEMORY_PROPOSALS_JSON>"
    )
    result = capture_turn(inbox, Policy(), DANA, "assistant", text, turn_id="t1")
    assert result.visible_text.strip() == "Sure."
    actions = [p.action for p in result.proposals]
    assert actions == ["accept", "reject"]
    assert result.proposals[1].item_id is None and result.proposals[0].item_id
    events = inbox.read_after(0)
    assert [e.kind for e in events] == ["turn", "proposal", "proposal"]
    # The rejected secret is not kept anywhere in the inbox.
    assert "ghp_R8xK2mQ9vL4tZ7wB1nC6yH3jF5dS0aPqEu2T" not in json.dumps([e.payload for e in events])
    overlay = fold_events(events)
    kinds = sorted(i.type for i in overlay.items.values())
    assert kinds == ["decision", "message"]
    decision = next(i for i in overlay.items.values() if i.type == "decision")
    assert decision.id == result.proposals[0].item_id
    assert decision.provenance.source_id == "t1" and decision.provenance.event_ids
    assert decision.confidence >= 0.7  # injectable under the default threshold
    assert decision.metadata["policy_version"]


def test_a_preference_for_this_chat_proposed_without_a_scope_is_the_chats(inbox):
    """The model names no scope: a preference that says it holds for this chat is that
    chat's (session scope); a decision that says where it was taken keeps the default, and
    so does a preference whose scope the model named."""
    items = [{"type": "preference", "title": "Answer language", "content": "In this chat, answer in French.",
              "why_store": "asked"},
             {"type": "decision", "title": "DB choice", "content": "In this conversation we chose PostgreSQL 16.",
              "why_store": "decided"},
             {"type": "preference", "title": "Units", "content": "For this chat, use metric units.",
              "why_store": "asked", "scope": "user"}]
    text = "Noted. <MEMORY_PROPOSALS_JSON>" + json.dumps(items) + "</MEMORY_PROPOSALS_JSON>"
    capture_turn(inbox, Policy(), DANA, "assistant", text, turn_id="t-chat")
    overlay = fold_events(inbox.read_after(0))
    scopes = {i.title: i.scope.kind for i in overlay.items.values() if i.type != "message"}
    assert scopes == {"Answer language": "session", "DB choice": "project", "Units": "user"}


def test_capture_is_idempotent_by_turn_id(inbox):
    first = capture_turn(inbox, Policy(), DANA, "user", "We deploy on Fridays.", turn_id="t9")
    second = capture_turn(inbox, Policy(), DANA, "user", "We deploy on Fridays.", turn_id="t9")
    assert first.seq == second.seq
    assert inbox.count() == 1


def test_a_turn_id_taken_between_the_check_and_the_append_is_a_conflict(inbox):
    """Two writers of one turn id at once: the other's turn lands after this capture has
    governed its own but before it appends. It must be refused, not acknowledged and dropped."""
    from pipelines.capture import TurnIdConflict

    def append_after_a_rival(events, **kw):
        capture_turn(inbox, Policy(), DANA, "user", "The rival's words.", turn_id="t5")
        return inbox.append(events, **kw)

    with pytest.raises(TurnIdConflict, match="'t5' is already taken"):
        capture_turn(inbox, Policy(), DANA, "user", "We deploy on Fridays.", turn_id="t5",
                     append=append_after_a_rival)
    (turn,) = inbox.read_after(0)
    assert turn.payload["text"] == "The rival's words."


def test_secret_in_user_turn_is_redacted_before_landing(inbox):
    capture_turn(inbox, Policy(), DANA, "user", "my key is AKIAIOSFODNN7EXAMPLE ok", turn_id="t2")
    (event,) = inbox.read_after(0)
    assert "AKIAIOSFODNN7EXAMPLE" not in event.payload["text"]
    assert event.payload["redactions"] >= 1


def test_a_stored_turn_keeps_no_credential_not_even_a_documentation_example(inbox):
    text = ("Staging credentials: AWS access key AKIAIOSFODNN7EXAMPLE with secret "
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY (fake, from the AWS docs).")
    capture_turn(inbox, Policy(), DANA, "user", text, turn_id="t-aws")
    (event,) = inbox.read_after(0)
    stored = event.payload["text"]
    assert "AKIAIOSFODNN7" not in stored and "wJalrXUtnFEMI" not in stored and "EXAMPLEKEY" not in stored
    assert stored == ("Staging credentials: AWS access key [REDACTED] with secret [REDACTED] "
                      "(fake, from the AWS docs).")
    assert event.payload["redactions"] == 2


def test_a_credential_two_rules_find_is_one_mark(inbox):
    key = "sk_live_51HqLyjWDarjtT1zdp7dcXfE0cq9Qm3Zr"  # found whole, and by its prefix
    capture_turn(inbox, Policy(), DANA, "user", f"Why does this fail? Bearer {key} on /v2/builds",
                 turn_id="t-stripe")
    (event,) = inbox.read_after(0)
    assert event.payload["text"] == "Why does this fail? Bearer [REDACTED] on /v2/builds"
    assert event.payload["redactions"] == 1


def test_a_masked_credential_keeps_the_name_of_its_setting(inbox):
    text = ("Env at failure:\n  AWS_SECRET_ACCESS_KEY=Hq8vR2mZt6Lw9Xp4Ns7Kd1Fy3Bc5Gj0Ua8Ee2Io\n"
            "  GITHUB_TOKEN=ghp_R7kQ2vX9mL4pT8wN3zB6cY1dF5hJ0sA2uE4g\n"
            "  hook: https://hooks.slack.com/services/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")
    capture_turn(inbox, Policy(), DANA, "user", text, turn_id="t-env")
    (event,) = inbox.read_after(0)
    assert event.payload["text"] == ("Env at failure:\n  AWS_SECRET_ACCESS_KEY=[REDACTED]\n"
                                     "  GITHUB_TOKEN=[REDACTED]\n  hook: [REDACTED]")  # a URL's scheme is no name
    assert event.payload["redactions"] == 3


@pytest.mark.parametrize("text", [
    "We moved the staging cluster to eu-west-1 on Tuesday; see docs/runbooks/Staging2024/failover.md.",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful!",
    "The build id is 4f9c2e1 and the image tag is api-server:2024.11.3-rc2.",
])
def test_ordinary_turns_are_stored_verbatim(inbox, text):
    capture_turn(inbox, Policy(), DANA, "user", text, turn_id="t-plain")
    (event,) = inbox.read_after(0)
    assert event.payload["text"] == text and event.payload["redactions"] == 0


def test_an_old_turn_keeps_its_date_and_records_when_loci_learned_it(inbox):
    said = "2025-01-15T09:00:00+00:00"
    text = ('Noted.<MEMORY_PROPOSALS_JSON>[{"type": "decision", "title": "Fence", "content": '
            '"Hydrangeas go along the north fence.", "why_store": "plan"}]</MEMORY_PROPOSALS_JSON>')
    capture_turn(inbox, Policy(), DANA, "assistant", text, turn_id="t-old", at=said)
    events = inbox.read_after(0)
    items = fold_events(events).items
    assert len(items) == 2  # the turn and its proposal
    for event in events:
        assert event.payload["at"] == said and event.at > said  # said then, learned now
    for item in items.values():
        assert item.created_at == said  # kept for temporal questions ("when did we decide?")
        assert item.metadata["learned_at"] == events[0].at


def test_capture_rejects_bad_role(inbox):
    with pytest.raises(ValueError, match="role"):
        capture_turn(inbox, Policy(), DANA, "robot", "hi")


def test_ingest_sample_chats(inbox):
    report = ingest_chat_jsonl(SAMPLES, inbox, Policy()).as_dict()
    assert report["turns"] == sum(1 for line in SAMPLES.read_text().splitlines() if line.strip())
    assert report["rejected"] >= 2  # the fake AWS key and the injection attempt
    assert report["accepted"] >= 6
    assert report["bad_rows"] == []
    # Each of the three proposal forms is present and landed.
    forms = {e.payload["form"] for e in inbox.read_after(0) if e.kind == "proposal"}
    assert {"json_block", "tool_call", "narrated"} <= forms
    again = ingest_chat_jsonl(SAMPLES, inbox, Policy()).as_dict()
    assert again["max_seq"] == report["max_seq"]  # idempotent: nothing new landed


def test_a_request_to_forget_in_an_imported_chat_forgets_what_it_names_of_the_users_own(inbox, tmp_path):
    claim = ('Noted. <MEMORY_PROPOSALS_JSON>[{"type": "fact", "title": "Ex address", "content": "Her ex lives at '
             '12 Rua das Flores.", "why_store": "asked", "confidence": 0.9, "scope": "user"}]</MEMORY_PROPOSALS_JSON>')
    rows = [("maya", "home", "user", "My ex's new address is 12 Rua das Flores."), ("maya", "home", "assistant", claim),
            ("maya", "home", "user", "My bank is Millennium."),
            ("maya", "home", "user", "Please forget my bank.", "Bob"),  # a teammate's: his own alone
            ("maya", "work", "user", "A client's ex address is on file."),  # another project: not hers to forget here
            ("ana", "home", "user", "My ex's address is 3 Rua Augusta."),  # someone else's
            ("maya", "home", "user", "The weather is nice, forget it."),  # names nothing of hers
            ("maya", "home", "user", "My keys are in the blue bowl."),
            ("maya", "home", "user", "I always forget my keys. Don't forget my keys tomorrow!"),  # no order
            ("maya", "home", "user", "Please forget my ex's address, I don't want it stored."),
            ("maya", "home", "assistant", "Done, I've forgotten it."),
            ("maya", "home", "user", "My ex moved: the new address is 5 Rua Nova.")]  # said again: kept
    path = tmp_path / "chats.jsonl"
    path.write_text("".join(json.dumps({"user_id": u, "project_id": p, "role": r, "text": t,
                                        "speaker": named[0] if named else None}) + "\n"
                            for u, p, r, t, *named in rows))
    ingest_chat_jsonl(path, inbox, Policy())
    overlay = fold_events(inbox.read_after(0))
    gone = {it.title if it.type != "message" else it.content
            for it in overlay.items.values() if it.validation == "retracted"}
    assert gone == {rows[0][3], "Ex address", rows[9][3], rows[10][3]}, gone
    landed = inbox.max_seq()
    ingest_chat_jsonl(path, inbox, Policy())
    assert inbox.max_seq() == landed  # importing again lands nothing, the forgetting included


@pytest.mark.parametrize("order", ["in order", "later file first"])
def test_a_request_to_forget_reaches_what_another_import_landed_before_it(inbox, tmp_path, order):
    """Aug-Sep and Oct-Nov as two files: October's "please forget my ex's address" forgets
    September's address and the claim kept of it, whichever file came first; not what was
    said after it, nor a teammate's words, nor another project's."""
    claim = ('Noted. <MEMORY_PROPOSALS_JSON>[{"type": "fact", "title": "Ex address", "content": "Her ex lives at '
             '12 Rua das Flores.", "why_store": "asked", "confidence": 0.9, "scope": "user"}]</MEMORY_PROPOSALS_JSON>')
    months = {"aug-sep": [("home", "user", "My ex's address is 12 Rua das Flores.", "09-01"),
                          ("home", "assistant", claim, "09-01"), ("home", "user", "My bank is Millennium.", "09-02"),
                          ("home", "user", "Bob's ex address is on the fridge.", "09-03", "Bob"),
                          ("work", "user", "A client's ex address is on file.", "09-04")],
              "oct-nov": [("home", "user", "Please forget my ex's address.", "10-02"),
                          ("home", "assistant", "Done, I've forgotten it.", "10-02"),
                          ("home", "user", "My ex moved: her address is now 5 Rua Nova.", "11-01")]}
    for name, rows in months.items():
        (tmp_path / name).write_text("".join(json.dumps({
            "user_id": "maya", "project_id": p, "role": r, "text": t, "at": f"2026-{day}T10:00:00+00:00",
            "session_id": name, "speaker": named[0] if named else None}) + "\n" for p, r, t, day, *named in rows))

    def stored(who):
        return fold_events(inbox.read_after(0)).items.values()

    def import_all():
        for name in (months if order == "in order" else reversed(months)):
            ingest_chat_jsonl(tmp_path / name, inbox, Policy(), stored=stored)

    import_all()
    gone = {it.title if it.type != "message" else it.content
            for it in fold_events(inbox.read_after(0)).items.values() if it.validation == "retracted"}
    assert gone == {"My ex's address is 12 Rua das Flores.", "Ex address", "Please forget my ex's address.",
                    "Done, I've forgotten it."}, gone
    landed = inbox.max_seq()
    import_all()
    assert inbox.max_seq() == landed  # importing again lands nothing, the forgetting included


@pytest.mark.parametrize("files", ["one file", "the request's file first", "the request's file last"])
def test_a_request_to_forget_reads_the_claims_words_not_the_proposal_json(inbox, tmp_path, files):
    """"Please forget my name" forgets what she said of her name: not a claim proposed in a
    tool call (its JSON says "name": "memory_save"), nor a turn showing a tool call's JSON,
    nor the other claims of the row that kept the one it names, whether the request comes
    in the same file, a later one or an earlier one."""
    call = json.dumps({"name": "memory_save", "arguments": {
        "type": "preference", "title": "Coffee", "content": "Maya takes her coffee with oat milk.",
        "why_store": "asked", "confidence": 0.9, "scope": "user"}})
    search = "Let me look. " + json.dumps({"name": "memory_search", "arguments": {"query": "coffee order"}})
    block = ('Noted. <MEMORY_PROPOSALS_JSON>[{"type": "fact", "title": "Full name", "content": "She is Maya '
             'Costa.", "confidence": 0.9, "scope": "user"}, {"type": "fact", "title": "Cat", "content": "Her cat '
             'is called Miso.", "confidence": 0.9, "scope": "user"}]</MEMORY_PROPOSALS_JSON>')
    rows = [("user", "I take my coffee with oat milk.", "09-01"), ("assistant", "Noted. " + call, "09-01"),
            ("assistant", search, "09-01"),
            ("user", "My name is Maya Costa and my cat is Miso.", "09-02"), ("assistant", block, "09-02"),
            ("user", "Please forget my name.", "10-01"), ("assistant", "Done.", "10-01")]
    parts = {"one file": [rows], "the request's file first": [rows[5:], rows[:5]],
             "the request's file last": [rows[:5], rows[5:]]}[files]

    def stored(who):
        return fold_events(inbox.read_after(0)).items.values()

    for number, part in enumerate(parts):
        path = tmp_path / f"part{number}.jsonl"
        path.write_text("".join(json.dumps({"user_id": "maya", "project_id": "home", "role": r, "text": t,
                                            "at": f"2026-{day}T10:00:00+00:00"}) + "\n" for r, t, day in part))
        ingest_chat_jsonl(path, inbox, Policy(), stored=stored)
    gone = {it.title if it.type != "message" else it.content
            for it in fold_events(inbox.read_after(0)).items.values() if it.validation == "retracted"}
    assert gone == {"Full name", rows[3][1], rows[5][1], rows[6][1]}, gone


def test_ingest_reports_bad_rows_and_keeps_going(inbox, tmp_path):
    path = tmp_path / "chats.jsonl"
    path.write_text(
        '{"role": "user", "text": "first fine row"}\n'
        "{not json\n"
        '{"role": "user", "txt": "typo key"}\n'
        '{"role": "wizard", "text": "bad role"}\n'
        '{"role": "user", "text": "last fine row"}\n'
    )
    report = ingest_chat_jsonl(path, inbox, Policy()).as_dict()
    assert report["turns"] == 2
    assert [b.split(":")[0] for b in report["bad_rows"]] == ["line 2", "line 3", "line 4"]


def test_ingest_refuses_blank_text_bad_times_and_empty_ids_naming_the_line(inbox, tmp_path):
    path = tmp_path / "chats.jsonl"
    path.write_text(
        '{"role": "user", "text": "fine", "at": "2026-03-02T10:00:00+00:00"}\n'
        '{"role": "user", "text": "   "}\n'
        '{"role": "user", "text": "when?", "at": "last Tuesday"}\n'
        '{"role": "user", "text": "who?", "org_id": ""}\n'
        '{"role": "user", "text": "also fine", "at": "2026-03-02"}\n'
    )
    report = ingest_chat_jsonl(path, inbox, Policy()).as_dict()
    assert report["turns"] == 2
    assert report["bad_rows"] == [
        "line 2: text is blank",
        "line 3: at 'last Tuesday' is not an ISO-8601 time (e.g. 2026-03-02T10:00:00+00:00)",
        "line 4: org_id is empty (leave it out to mean 'default')",
    ]
    assert [e.payload["text"] for e in inbox.read_after(0)] == ["fine", "also fine"]


def _locomo_file(tmp_path):
    data = [{
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a dog named Rex."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "Nice!", "blip_caption": "a dog on grass"},
            ],
            "session_2_date_time": "10:00 am on 9 June, 2023",
            "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "Rex learned to sit."}],
        },
        "qa": [],
    }]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data))
    return path


def test_locomo_import_keeps_dia_ids_dates_and_scope(inbox, tmp_path):
    report = ingest_locomo(_locomo_file(tmp_path), inbox, Policy())
    assert report.turns == 3
    items = list(fold_events(inbox.read_after(0)).items.values())
    assert sorted(r for i in items for r in i.provenance.turn_refs) == ["D1:1", "D1:2", "D2:1"]
    first = next(i for i in items if "D1:1" in i.provenance.turn_refs)
    assert first.valid_from.startswith("2023-05-08T13:56")
    assert first.scope.kind == "user" and first.scope.user_id == "conv-x"
    assert first.title == "Ann"
    caption = next(i for i in items if "D1:2" in i.provenance.turn_refs)
    assert "a dog on grass" in caption.content


def test_ones_own_history_lands_as_the_importers_in_their_project(inbox, tmp_path):
    """`loci import --user nora --project home --speaker Ann`: two LoCoMo conversations of
    one owner keep their sessions and turns apart (both have a D1:1); chat rows naming no
    owner take hers, a row naming its own keeps it. A speaker the file never names is an
    error before anything lands."""
    path = _locomo_file(tmp_path)
    other = json.loads(path.read_text())[0] | {"sample_id": "conv-y"}
    path.write_text(json.dumps([json.loads(path.read_text())[0], other]))
    nora = Owner(user_id="nora", project_id="home", speaker="Ann")  # she is Ann in the file
    assert ingest_locomo(path, inbox, Policy(), owner=nora).turns == 6
    said = fold_events(inbox.read_after(0)).items.values()
    assert sorted({i.title for i in said}) == ["Bo", "user"]  # her turns are the user's, as in a live chat
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps({"role": "user", "text": "I moved to Porto."}) + "\n"
                    + json.dumps({"role": "user", "text": "Hi.", "user_id": "bo"}) + "\n")
    assert ingest_chat_jsonl(chat, inbox, Policy(), owner=nora).turns == 2
    scopes = {(i.scope.user_id, i.metadata.get("project_id"), i.scope.session_id)
              for i in fold_events(inbox.read_after(0)).items.values()}
    assert {s[:2] for s in scopes} == {("nora", "home"), ("bo", "home")}
    assert {s[2] for s in scopes} >= {"conv-x/session_1", "conv-y/session_1", "conv-x/session_2"}
    before = inbox.max_seq()
    with pytest.raises(ValueError, match="speaker 'ann' is none of the file's speakers"):
        ingest_locomo(path, inbox, Policy(), owner=Owner(user_id="nora", speaker="ann"))
    assert inbox.max_seq() == before


def test_a_file_imported_before_as_another_speaker_is_a_clear_error_naming_how(inbox, tmp_path):
    """Each turn's id is its dia_id's: imported again as another speaker, every turn would
    count as already landed and keep its old speaker, and the importer would be told nothing.
    It is an error naming how the file was imported, before anything lands; imported the same
    way again, it lands what is new."""
    path = _locomo_file(tmp_path)
    nora = Owner(user_id="nora", project_id="home", speaker="Ann")
    assert ingest_locomo(path, inbox, Policy(), owner=nora).turns == 3
    before = inbox.max_seq()
    told = r"imported before with --speaker Ann \(e\.g\. D1:1\).*nothing was imported"
    for speaker in ("Bo", None):
        with pytest.raises(ValueError, match=told):
            ingest_locomo(path, inbox, Policy(), owner=Owner(user_id="nora", project_id="home", speaker=speaker))
    assert inbox.max_seq() == before
    again = ingest_locomo(path, inbox, Policy(), owner=nora)
    assert (again.turns, again.already) == (0, 3)

    plain = tmp_path / "plain"
    plain.mkdir()
    with Inbox(plain / "inbox.sqlite3") as other:
        ingest_locomo(path, other, Policy(), owner=Owner(user_id="nora"))
        with pytest.raises(ValueError, match="imported before without --speaker"):
            ingest_locomo(path, other, Policy(), owner=Owner(user_id="nora", speaker="Ann"))
    # another owner's import of the same file is its own
    assert ingest_locomo(path, inbox, Policy(), owner=Owner(user_id="bo", speaker="Bo")).turns == 3


def test_locomo_bad_file_is_a_clear_error(inbox, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ValueError, match="not a LoCoMo JSON"):
        ingest_locomo(bad, inbox, Policy())
    assert parse_locomo_date("nonsense") is None


def test_import_items_governs_again(inbox, tmp_path):
    ok = MemoryItem(id="m1", tier="mtm", type="fact", title="Deploys", content="Deploys on Fridays.",
                    scope=Scope(kind="user", user_id="dana"))
    ok.provenance.source_id = "turn-1"
    bad = MemoryItem(id="m2", tier="stm", type="fact", title="key",
                     content="-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----",
                     scope=Scope(kind="user", user_id="dana"))
    import msgspec
    path = tmp_path / "items.jsonl"
    path.write_text(msgspec.json.encode(ok).decode() + "\n" + msgspec.json.encode(bad).decode() + "\nnot json\n")
    report = import_items_jsonl(path, inbox, Policy()).as_dict()
    assert report["accepted"] == 1 and report["rejected"] == 1
    assert report["bad_rows"][0].startswith("line 3")
    overlay = fold_events(inbox.read_after(0))
    assert set(overlay.items) == {"m1"}
    assert "PRIVATE KEY" not in json.dumps([e.payload for e in inbox.read_after(0)])


def test_an_imported_claim_contradicting_someone_elses_is_held_and_the_hold_is_folded(inbox, tmp_path):
    """Given the stored claims (`existing`), an imported claim is governed as a write is:
    contradicting another user's claim in its scope kind, held for review, and the fold
    holds it as a proposal is held (in quarantine, confidence capped, so neither recall nor
    the review queue takes it for an accepted memory); contradicting the importer's own,
    it stands (an export corrects nothing); without `existing`, the policy alone. Held, it
    names the claim it contradicts (`held_against`: recall looks it up). The same
    export imported again lands nothing (counted as already in the inbox)."""
    import msgspec

    from pipelines.materialize import DISAGREES_WITH, HELD_AGAINST, QUARANTINE_MAX_CONFIDENCE, in_quarantine

    maya = _household_claim("maya1", "maya", "Leo bedtime", "Leo's bedtime is 8:30pm on school nights.")
    jon_old = _household_claim("jon0", "jon", "Bedtime", "Leo goes to bed at 10pm on school nights.")
    jon = _household_claim("jon1", "jon", "Bedtime", "Leo goes to bed at 9pm on school nights.")
    jon.provenance.source_id = "turn-9"
    path = tmp_path / "items.jsonl"
    path.write_text(msgspec.json.encode(jon).decode() + "\n")
    report = import_items_jsonl(path, inbox, Policy(), existing=lambda who: (lambda _: [maya, jon]))
    assert report.as_dict()["quarantined"] == 1, report.as_dict()
    held = fold_events(inbox.read_after(0)).items["jon1"]
    assert in_quarantine(held) and held.confidence <= QUARANTINE_MAX_CONFIDENCE, held
    assert held.metadata[HELD_AGAINST] == ["maya1"]  # Maya's claim, delivered, says a change waits
    again = import_items_jsonl(path, inbox, Policy(), existing=lambda who: (lambda _: [jon_old])).as_dict()
    assert again["already"] == 1 and again["accepted"] == 0, again  # imported before: nothing new lands
    for n, existing in enumerate([lambda who: (lambda _: [jon_old]), None]):  # each another export's copy
        path.write_text(msgspec.json.encode(msgspec.structs.replace(jon, id=f"jon-copy{n}")).decode() + "\n")
        report = import_items_jsonl(path, inbox, Policy(), existing=existing).as_dict()
        assert report["accepted"] == 1, report
    # standing beside the importer's own claim it contradicts, it names it: recall shows both
    stood = fold_events(inbox.read_after(0)).items["jon-copy0"]
    assert stood.metadata.get(DISAGREES_WITH) == ["jon0"] and not in_quarantine(stood), stood


def test_a_forgotten_item_held_on_import_stays_forgotten(inbox, tmp_path):
    """A full backup (`loci export --all`) holds forgotten items whole; one the policy holds
    for review on the way in (here: low confidence) is still retracted, not revived."""
    import msgspec

    unsure = MemoryItem(id="f1", tier="stm", type="fact", title="Shoe size", content="Leo's shoe size is 12.",
                        scope=Scope(kind="user", user_id="dana"), confidence=0.1, validation="retracted")
    path = tmp_path / "items.jsonl"
    path.write_text(msgspec.json.encode(unsure).decode() + "\n")
    assert import_items_jsonl(path, inbox, Policy()).as_dict()["quarantined"] == 1
    assert fold_events(inbox.read_after(0)).items["f1"].validation == "retracted"


def test_fold_applies_updates_links_usage_and_base_items():
    who = Identity(user_id="u")
    base = MemoryItem(id="old", tier="mtm", type="fact", title="A", content="a", scope=Scope(kind="user", user_id="u"))
    events = [
        Event(event_id="e1", seq=1, kind="memory.update", identity=who,
              payload={"item_id": "old", "patch": {"content": "a2"}, "verdict": {"action": "accept"}}),
        Event(event_id="e2", seq=2, kind="memory.link", identity=who,
              payload={"src_id": "old", "dst_id": "other", "rel": "references"}),
        Event(event_id="e3", seq=3, kind="usage", identity=who, payload={"item_ids": ["old", "old"]}),
        Event(event_id="e4", seq=4, kind="memory.update", identity=who,
              payload={"item_id": "old", "patch": {"content": "secret"}, "verdict": {"action": "reject"}}),
    ]
    overlay = fold_events(events, base={"old": base}.get)
    item = overlay.items["old"]
    assert item.content == "a2" and item.content_hash != base.content_hash
    assert [(link.rel, link.to) for link in item.links] == [("references", "other")]
    assert overlay.usage == {"old": 2} and overlay.max_seq == 4


def test_apply_patch_refuses_unknown_fields():
    item = MemoryItem(id="x", tier="stm", type="fact", title="t", content="c", scope=Scope())
    with pytest.raises(ValueError, match="not patchable"):
        apply_patch(item, {"tier": "ltm"}, "2026-01-01T00:00:00+00:00")


def test_message_ids_are_stable():
    assert message_item_id("t1") == message_item_id("t1") != message_item_id("t2")


def _household_claim(id_: str, user: str, title: str, content: str) -> MemoryItem:
    who = Identity(user_id=user, project_id="home", session_id="s", org_id="fam")
    return MemoryItem(id=id_, tier="stm", type="fact", title=title, content=content,  # type: ignore[arg-type]
                      scope=Scope.for_identity("project", who), confidence=0.9)


def test_an_author_s_correction_is_not_held_for_someone_else_s_echo_of_the_corrected_claim():
    """Maya corrects her own bedtime claim; Jon's older note only repeats what hers said.
    The echo agrees with what she takes back: her correction is accepted and replaces her
    claim (the echo stays). A note of Jon's stating a third value still holds it."""
    from pipelines.capture import echoes, govern_claim
    from pipelines.records import ProposedItem, Provenance

    mine = _household_claim("a", "maya", "Leo bedtime", "Leo's bedtime is 8pm on school nights.")
    echo = _household_claim("b", "jon", "Bedtime", "Leo goes to bed at 8pm on school nights.")
    other = _household_claim("c", "jon", "Bedtime", "Leo goes to bed at 9pm on school nights.")
    fix = ProposedItem(type="fact", title="Leo bedtime", content="Leo's bedtime is 8:30pm on school nights.",
                       why_store="family", confidence=0.9, scope="project")
    prov = Provenance(source_kind="chat", source_id="t1")
    assert echoes(echo, [mine], 0.9) and not echoes(other, [mine], 0.9) and not echoes(echo, [], 0.9)
    # A more confident echo would outrank the correction in recall: no echo, held as before.
    assert not echoes(echo, [mine], 0.8) and not echoes(echo, [mine])
    verdict, replaced, held_against, disagrees = govern_claim(Policy(), fix, provenance=prov, found=[mine, echo],
                                                              scope_kind="project", author_user_id="maya")
    assert (verdict.action, replaced.replaced, replaced.in_part, held_against) == ("accept", ["a"], [], []), verdict
    assert disagrees == [echo.id]  # the echo stands beside it: named, recall shows the two together
    verdict, replaced, held_against, _ = govern_claim(Policy(), fix, provenance=prov, found=[mine, echo, other],
                                                   scope_kind="project", author_user_id="maya")
    assert verdict.action == "quarantine" and "contradicts item c" in " ".join(verdict.reasons), verdict
    assert held_against == ["c"]  # what its item links to (`contradicts`): recall reads the link from "c"
    # Without a claim of her own to correct, Jon's note is someone else's claim: held, as before.
    verdict, _, held_against, _ = govern_claim(Policy(), fix, provenance=prov, found=[echo], scope_kind="project",
                                            author_user_id="maya")
    assert verdict.action == "quarantine" and held_against == ["b"], (verdict, held_against)


def test_a_files_format_is_read_from_its_first_row(tmp_path):
    """`loci import` / `loci ingest` without --format: a chat JSONL, an items export, a
    LoCoMo list; anything else is left to the command's usual reader (which names the fault)."""
    from pipelines.ingest import file_format

    cases = {"chat": '\n{"role": "user", "text": "hi"}\n', "items": '{"id": "m1", "type": "fact", "content": "x"}\n',
             "locomo": '[{"conversation": {}}]', None: "not json\n"}
    for expected, text in cases.items():
        path = tmp_path / f"{expected}.jsonl"
        path.write_text(text)
        assert file_format(path) == expected, text


def test_a_chat_export_imported_again_with_another_speaker_names_how_each_turn_landed(inbox, tmp_path):
    # Before, each re-imported row counted as already landed and kept its old speaker, silently.
    path = tmp_path / "chats.jsonl"
    rows = [{"role": "user", "text": "I moved to Porto.", "speaker": "Nora", "turn_id": "t1"},
            {"role": "user", "text": "Lisbon is next.", "turn_id": "t2"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert ingest_chat_jsonl(path, inbox, Policy()).turns == 2
    path.write_text("".join(json.dumps({**r, "speaker": "Ana"}) + "\n" for r in rows))
    again = ingest_chat_jsonl(path, inbox, Policy())
    assert again.bad_rows == [
        "line 1: turn_id 't1' landed before with speaker 'Nora', not with speaker 'Ana': a turn keeps the speaker "
        "it landed with; send it as it landed, or give the turn its own id",
        "line 2: turn_id 't2' landed before without a speaker (the caller's own), not with speaker 'Ana': a turn "
        "keeps the speaker it landed with; send it as it landed, or give the turn its own id"]
    assert [e.payload["speaker"] for e in inbox.read_after(0) if e.kind == "turn"] == ["Nora", None]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))  # as it landed: a retry
    assert ingest_chat_jsonl(path, inbox, Policy()).bad_rows == []


@pytest.mark.parametrize(("stated", "replaced", "kept"), [
    (None, [10, 3], 10), (4, [8], 8),  # the correction of an always-on claim stays always-on
    (None, [3], None), (9, [7], 9),  # never lowered: the default 5 is not set down to a replaced 3
])
def test_a_correction_keeps_the_importance_of_what_it_replaces(stated, replaced, kept) -> None:
    old = [MemoryItem(id=f"m{n}", tier="stm", type="fact", title="t", content="c", importance=i,
                      scope=Scope(kind="project", user_id="u", project_id="p")) for n, i in enumerate(replaced)]
    assert kept_importance(ProposedItem(type="fact", content="c", importance=stated), old).importance == kept
