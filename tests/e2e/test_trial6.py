"""A demanding new user's sixth trial: one person (Sam) with several chats over days (health,
money, a hobby project), talking to a model through Loci's Ollama proxy (`/api/chat`) and its
OpenAI-compatible chat API (`/v1/chat/completions`), both on loopback in front of the fake
Ollama server, and reading memory through `loci serve`'s tool API. Promises checked:

- A correction replaces: the raw turns that said the replaced value (the old claim's
  exchange, said before the correction) are not handed to the model as evidence beside the
  correction, before or after consolidation; a turn on another subject still is, and so is
  the old value said again after the correction.
- A wish for one chat ("for this chat, answer in French") stays in that chat: the raw turn
  that said it is not evidence in the user's other chats, and a preference the model proposed
  for "this chat" without naming a scope is that chat's (session scope), not the project's.
- The model's `memory.read` of an id a correction replaced, or that consolidation archived,
  says so (`superseded_by`, `archived`) instead of only listing it as `missing`, as if it
  never existed; an id replaced since the last consolidation names its correction too. Through
  the proxy, such a read is not answered with "memory holds nothing".
- An assistant's filler ("Sure, I'll use that!") is not evidence: it comes back on any
  question with "use" in it and says nothing.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from pipelines.consolidate import consolidate_once
from tests.e2e.chat import consolidate
from tests.online.test_proxy import block, fake, shared_fake, system_text  # noqa: F401 - fixtures

SAM = {"X-Loci-User": "sam", "X-Loci-Project": "home"}


def in_chat(session: str) -> dict[str, str]:
    return {**SAM, "X-Loci-Session": session}


def ollama_chat(url: str, session: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    resp = httpx.post(f"{url}/api/chat", json={"model": "llama3.2", "stream": False, "messages": messages},
                      headers=in_chat(session), timeout=60)
    assert resp.status_code == 200, resp.text
    return resp.json()


def openai_chat(url: str, session: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    resp = httpx.post(f"{url}/v1/chat/completions", json={"model": "llama3.2", "messages": messages},
                      headers=in_chat(session), timeout=60)
    assert resp.status_code == 200, resp.text
    return resp.json()


def consolidate_proxy(memory) -> None:
    """What the scheduled job does between two chats: consolidate, load the new snapshot."""
    assert memory.usage.flush()
    consolidate_once(memory.settings)
    memory.reload()


def said(fake, path: str = "/api/chat") -> str:  # noqa: F811
    """The memory block the model was last handed."""
    return system_text([body for p, body in fake.requests if p == path][-1])


# -- a correction replaces, evidence included ------------------------------------------------


def test_a_corrected_dose_is_not_handed_back_through_the_turns_that_said_the_old_one(
        proxy, fake, memory) -> None:  # noqa: F811
    """Sam tells the assistant his amlodipine dose (5 mg); days later, in another chat, his
    doctor raised it (10 mg) and the model proposes the correction, which replaces the old
    memory. Asked in a third chat, the model was handed the correction and, as
    "conversation excerpts", the turns of the first chat saying 5 mg, the old one first:
    two doses for one question, the stale one on top; asked in the old turn's words ("what
    did my doctor put me on?"), only the old dose. The turns that said the replaced value
    are not evidence any more (before and after consolidation), the correction answers in
    their place; what he said on
    another subject in that chat still is, and a turn saying 5 mg after the correction
    (said again, on purpose) comes back."""
    url = proxy()
    old = {"type": "fact", "title": "Amlodipine dose", "content": "Sam takes amlodipine 5 mg every morning.",
           "why_store": "health", "confidence": 0.9, "scope": "user"}
    fake.chat_reply = lambda req: "Noted: 5 mg of amlodipine every morning. " + block(old)
    ollama_chat(url, "health-1", [{"role": "user", "content":
                                   "My doctor put me on amlodipine 5 mg every morning for my blood pressure."}])
    fake.chat_reply = lambda req: "Good to know."
    ollama_chat(url, "health-1", [{"role": "user", "content": "My cardiologist is Dr. Okafor at Riverside clinic."}])
    new = {**old, "content": "Sam takes amlodipine 10 mg every morning."}
    fake.chat_reply = lambda req: "Understood, 10 mg from now on. " + block(new)
    ollama_chat(url, "health-2", [{"role": "user", "content":
                                   "Update: my doctor raised my amlodipine to 10 mg every morning."}])
    question = [{"role": "user", "content": "How much amlodipine do I take every morning?"}]
    fake.chat_reply = lambda req: "10 mg."
    for moment in ("at once", "after consolidation"):
        ollama_chat(url, "health-3", question)
        shown = said(fake)
        assert "10 mg" in shown, (moment, shown)
        assert "5 mg" not in shown, (moment, shown)
        # Asked in the old turn's words only, the correction answers, not the old turn.
        ollama_chat(url, "health-3", [{"role": "user", "content":
                                       "What did my doctor put me on for my blood pressure?"}])
        shown = said(fake)
        assert "10 mg" in shown and "5 mg" not in shown, (moment, shown)
        ollama_chat(url, "health-3", [{"role": "user", "content": "Who is my cardiologist at Riverside clinic?"}])
        assert "Dr. Okafor" in said(fake), moment
        consolidate_proxy(memory)
    fake.chat_reply = lambda req: "Noted."
    ollama_chat(url, "health-4", [{"role": "user", "content":
                                   "Back to amlodipine 5 mg every morning, the doctor lowered it again today."}])
    ollama_chat(url, "health-5", question)
    assert "lowered it again" in said(fake)


def test_a_medication_stopped_is_not_handed_back_through_the_turn_that_said_it(proxy, fake, memory) -> None:  # noqa: F811
    """Through the OpenAI-compatible API: Sam said he takes amlodipine; later his doctor
    took him off it and the model proposes the correction ("Sam no longer takes
    amlodipine"). Asked whether he takes any blood pressure medication, the model was
    handed the correction and, first among the excerpts, "I take amlodipine 10 mg every
    morning": his "I" is the Sam the correction names, so that turn said what it replaced."""
    url = proxy()
    old = {"type": "fact", "title": "Blood pressure medication", "content": "Sam takes amlodipine 10 mg every morning.",
           "why_store": "health", "confidence": 0.9, "scope": "user"}
    fake.chat_reply = lambda req: "Noted. " + block(old)
    openai_chat(url, "health-1", [{"role": "user", "content":
                                   "I take amlodipine 10 mg every morning for my blood pressure."}])
    new = {**old, "content": "Sam no longer takes amlodipine."}
    fake.chat_reply = lambda req: "Great news! " + block(new)
    openai_chat(url, "health-2", [{"role": "user", "content":
                                   "Good news: my doctor took me off amlodipine, I no longer take it."}])
    fake.chat_reply = lambda req: "No."
    for moment in ("at once", "after consolidation"):
        openai_chat(url, "health-3", [{"role": "user", "content": "Do I take any blood pressure medication?"}])
        shown = said(fake, "/v1/chat/completions")
        assert "Sam no longer takes amlodipine." in shown and "10 mg" not in shown, (moment, shown)
        consolidate_proxy(memory)


# -- a wish for one chat stays in that chat ---------------------------------------------------


def test_a_wish_for_this_chat_only_is_not_evidence_in_the_other_chats(proxy, fake, memory) -> None:  # noqa: F811
    """In one chat (an OpenAI client), Sam asks for answers in French, for this chat only;
    the model proposes it as that session's preference. Asked in another chat how to
    answer, the model was handed "For this chat, answer in French please." as a
    conversation excerpt: the wish leaked out of its chat through the raw turn. It is not
    evidence elsewhere; in its own chat the preference still applies."""
    url = proxy()
    wish = {"type": "preference", "title": "Language for this chat", "content": "In this chat, answer in French.",
            "why_store": "asked", "confidence": 0.9, "scope": "session"}
    fake.chat_reply = lambda req: "D'accord. " + block(wish)
    first = [{"role": "user", "content": "For this chat, answer in French please."}]
    openai_chat(url, "trip", first)
    fake.chat_reply = lambda req: "Sure."
    for moment in ("at once", "after consolidation"):
        openai_chat(url, "budget", [{"role": "user", "content": "Which language should you answer in?"}])
        assert "French" not in said(fake, "/v1/chat/completions"), (moment, said(fake, "/v1/chat/completions"))
        openai_chat(url, "trip", [{"role": "user", "content": "Which language should you answer in?"}])
        assert "In this chat, answer in French." in said(fake, "/v1/chat/completions"), moment
        consolidate_proxy(memory)


def test_a_wish_for_this_chat_the_model_proposed_without_a_scope_stays_in_that_chat(
        proxy, fake, memory) -> None:  # noqa: F811
    """The model proposes "In this chat, answer in French." and names no scope: Loci stored
    it in the project (the default), and every other chat of the project was told to
    follow it ("Entries of type preference are the user's own wishes ..."): Sam's budget
    chat answered in French. A preference that says it is for this chat is this chat's
    (session scope); in its own chat it still applies."""
    url = proxy()
    wish = {"type": "preference", "title": "Answer language", "content": "In this chat, answer in French.",
            "why_store": "asked", "confidence": 0.9}
    fake.chat_reply = lambda req: "D'accord. " + block(wish)
    reply = openai_chat(url, "trip", [{"role": "user", "content": "For this chat, answer in French please."}])
    (verdict,) = reply["loci"]["proposals"]
    assert verdict["action"] == "accept", verdict
    assert verdict["scope"] == "session", verdict  # the verdict says where it went
    fake.chat_reply = lambda req: "Sure."
    for moment in ("at once", "after consolidation"):
        openai_chat(url, "budget", [{"role": "user", "content": "Which language should you answer in?"}])
        assert "French" not in said(fake, "/v1/chat/completions"), (moment, said(fake, "/v1/chat/completions"))
        openai_chat(url, "trip", [{"role": "user", "content": "Which language should you answer in?"}])
        assert "In this chat, answer in French." in said(fake, "/v1/chat/completions"), moment
        consolidate_proxy(memory)


# -- memory.read says what became of an id ----------------------------------------------------


def test_memory_read_says_an_id_was_replaced_or_archived_not_only_missing(service) -> None:
    """The model reads by id what it saw earlier: Sam's savings goal (corrected since: 300
    then 400 euros a month) and his gym day (expired, archived). `memory.read` listed both
    under `missing`, like ids that never existed, so the model told Sam it had no such
    memory. The ids stay under `missing` (they are not served), and `superseded_by` names
    the correction, `archived` the archived one; before consolidation the old goal is
    returned naming its correction (`superseded_by`), not as current."""
    client, settings = service
    sam = {"user_id": "sam", "project_id": "home", "session_id": "money-1"}

    def tool(action: str, args: dict) -> dict:
        resp = client.post("/v1/tools", json={"action": action, "identity": sam, "args": args})
        assert resp.status_code < 300, resp.text
        return resp.json()["result"]

    def write(title: str, content: str) -> str:
        return tool("memory.write", {"item": {"type": "fact", "title": title, "content": content,
                                              "why_store": "said", "confidence": 0.9, "scope": "user"}})["item_id"]

    old = write("Savings goal", "Sam saves 300 euros a month.")
    gym = write("Gym day", "Sam goes to the gym on Mondays.")
    consolidate(client, settings)
    new = write("Savings goal", "Sam saves 400 euros a month.")
    read = tool("memory.read", {"ids": [old, new]})
    assert {i["id"]: i["superseded_by"] for i in read["items"]} == {old: new, new: None}, read
    assert read.get("superseded_by") == {old: new}, read
    tool("memory.update", {"id": gym, "patch": {"expires_at": "2026-01-01T00:00:00Z"}})
    consolidate(client, settings)
    read = tool("memory.read", {"ids": [old, new, gym, "mem_never_was"]})
    assert [i["id"] for i in read["items"]] == [new]
    assert read["missing"] == [old, gym, "mem_never_was"], read
    assert read.get("superseded_by") == {old: new} and read.get("archived") == [gym], read
    eve = {"user_id": "eve", "project_id": "home", "session_id": "e1"}
    resp = client.post("/v1/tools", json={"action": "memory.read", "identity": eve, "args": {"ids": [old, gym]}})
    assert resp.json()["result"] == {"items": [], "missing": [old, gym]}, resp.text  # not hers: nothing told


def test_the_models_memory_read_of_a_replaced_id_is_not_answered_as_nothing(proxy, fake, memory) -> None:  # noqa: F811
    """Through the proxy with Loci's memory tools on: the model reads by id the savings goal
    it saw in an earlier answer's catalog, corrected since. It was handed the tool result
    (the id under `missing`) and beside it "memory holds nothing about this request. Tell
    the user plainly that memory does not contain it": the proxy counted only `items` as
    found. What became of the id is an answer: no such note."""
    memory.settings.flags["memory_tools"] = True
    url = proxy()
    goal = {"type": "fact", "title": "Savings goal", "content": "Sam saves 300 euros a month.",
            "why_store": "money", "confidence": 0.9, "scope": "user"}
    fake.chat_reply = lambda req: "Noted. " + block(goal)
    (old,) = ollama_chat(url, "money-1", [{"role": "user", "content": "I save 300 euros a month."}]
                         )["loci"]["proposals"]
    fake.chat_reply = lambda req: "Noted. " + block({**goal, "content": "Sam saves 400 euros a month."})
    (new,) = ollama_chat(url, "money-2", [{"role": "user", "content": "I now save 400 euros a month."}]
                         )["loci"]["proposals"]
    consolidate_proxy(memory)

    def model(req: dict[str, Any]) -> dict[str, Any] | str:
        if not any(m["role"] == "tool" for m in req["messages"]):
            return {"content": "", "tool_calls": [
                {"function": {"name": "memory_read", "arguments": {"ids": [old["item_id"]]}}}]}
        return "Your goal was replaced: you save 400 euros a month now."

    fake.chat_reply = model
    ollama_chat(url, "money-3", [{"role": "user", "content": "Read me memory " + old["item_id"]}])
    second = [body for p, body in fake.requests if p == "/api/chat"][-1]
    (result,) = [json.loads(m["content"]) for m in second["messages"] if m["role"] == "tool"]
    assert result["superseded_by"] == {old["item_id"]: new["item_id"]}, result
    assert "memory holds nothing" not in json.dumps(second), second["messages"]


# -- filler is not evidence -------------------------------------------------------------------


def test_an_assistants_filler_is_not_evidence(proxy, fake, memory) -> None:  # noqa: F811
    """Sam's model-railway chat: he names his printer and filament, the model answers
    "Sure, I'll use that!". Days later, "Which filament should I use for the bridge?" was
    handed that filler as a conversation excerpt, because it says "use". It says nothing:
    only what Sam said comes back."""
    url = proxy()
    fake.chat_reply = lambda req: "Sure, I'll use that!"
    ollama_chat(url, "trains-1", [{"role": "user", "content":
                                   "For the railway parts I print with PETG filament on my Prusa MK4."}])
    fake.chat_reply = lambda req: "Of course, I'll keep that in mind from now on."
    ollama_chat(url, "trains-1", [{"role": "user", "content": "The layout is HO scale."}])
    fake.chat_reply = lambda req: "PETG."
    ollama_chat(url, "trains-2", [{"role": "user", "content": "Which filament should I use for the bridge?"}])
    shown = said(fake)
    assert "PETG" in shown, shown
    assert "I'll use that" not in shown and "keep that in mind" not in shown, shown
