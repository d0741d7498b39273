"""Recall-intent detection in text and memory.* tool-call parsing."""

from __future__ import annotations

import json

import pytest

from pipelines.recall.intents import (
    PalaceGetArgs,
    PalaceListArgs,
    ReadArgs,
    SearchArgs,
    ToolCallError,
    detect_recall_intent,
    parse_memory_tool_call,
)

POSITIVES = [
    ("What do we know about the deployment pipeline?", "know_about", "the deployment pipeline"),
    ("Please recall memories about Project Phoenix", "recall", "Project Phoenix"),
    ("Can you recall the database we chose?", "recall", "the database we chose"),
    ("ok, recall the last decision on caching", "recall", "the last decision on caching"),
    ("As we decided earlier, the warehouse uses DuckDB.", "as_decided", "the warehouse uses DuckDB"),
    ("From memory: which port does the proxy use?", "from_memory", "which port does the proxy use"),
    ("Do you remember my favourite colour?", "remember", "my favourite colour"),
    ("Hey. Do you still remember the name of my dog?", "remember", "the name of my dog"),
    ("What did I say about the budget?", "what_did_say", "the budget"),
    ("what did we decide on retries", "what_did_say", "retries"),
    ("Remind me what the key rotation policy is.", "remind_me", "the key rotation policy is"),
    ("Remember when we talked about HNSW?", "remember_when", "when we talked about HNSW"),
    ("Did we decide on the vector store?", "did_we", "the vector store"),
    ("Search your memory for the deploy checklist", "search_memory", "the deploy checklist"),
    ("Last time we talked, you suggested a name for the cat.", "last_time",
     "you suggested a name for the cat"),
]

NEGATIVES = [
    "Remember to buy milk tomorrow.",
    "Please remember this for later.",
    "The product recall affected two million cars.",
    "Recall that the derivative of x squared is 2x.",
    "Recall of the model is 0.8 and precision is 0.7.",
    "The model. Recall @10 is 0.5",
    "Can you explain how recall and precision differ?",
    "My laptop has 16 GB of memory.",
    "I freed some memory from the cache.",
    "We have a memory leak in the server.",
    "How much memory does Redis use?",
    "Store this in memory: the port is 8080.",
    "I don't remember the exact number but it was big.",
    "What do you think about Rust?",
    "Let's decide on the database now.",
    "What is the capital of France?",
    "Write a poem about memories of summer.",
    "",
    "   ",
]


@pytest.mark.parametrize("text,trigger,query", POSITIVES)
def test_recall_phrasings_are_detected_with_their_query(text, trigger, query):
    intent = detect_recall_intent(text)
    assert intent is not None, text
    assert intent.trigger == trigger
    assert intent.query == query
    assert intent.span and intent.span.lower() in text.lower()


@pytest.mark.parametrize("text", NEGATIVES)
def test_ordinary_text_does_not_fire(text):
    assert detect_recall_intent(text) is None


def test_intent_without_an_object_falls_back_to_the_sentence():
    intent = detect_recall_intent("What did we decide?")
    assert intent is not None and intent.trigger == "what_did_say"
    assert intent.query  # never an empty query
    # A bare "in your memory" keeps the rest of the sentence as the query.
    intent = detect_recall_intent("What's in your memory about Kubernetes?")
    assert intent is not None and "Kubernetes" in intent.query


def test_non_string_text_is_a_type_error():
    with pytest.raises(TypeError):
        detect_recall_intent(None)  # type: ignore[arg-type]


# -- tool calls --------------------------------------------------------------------------


def test_openai_shape_with_json_string_arguments():
    call = {"id": "call_1", "type": "function", "function": {
        "name": "memory_search",
        "arguments": json.dumps({"query": " inbox format ", "k": 5, "tags": ["inbox"],
                                 "tier": "ltm"})}}
    req = parse_memory_tool_call(call)
    assert req is not None
    assert req.name == "memory.search" and req.call_id == "call_1"
    assert req.arguments == SearchArgs(query="inbox format", k=5, tags=["inbox"], tier="ltm")


def test_ollama_shape_with_dict_arguments_and_dotted_names():
    req = parse_memory_tool_call({"function": {"name": "memory.read",
                                               "arguments": {"ids": ["a", "b", "a"]}}})
    assert req is not None and req.name == "memory.read"
    assert req.arguments == ReadArgs(ids=["a", "b"])  # de-duplicated, order kept
    req = parse_memory_tool_call({"function": {"name": "memory.palace.list",
                                               "arguments": {"domain": "loci", "room": "infra"}}})
    assert req is not None and req.arguments == PalaceListArgs(path="loci/infra")
    req = parse_memory_tool_call({"name": "memory_palace_get",
                                  "arguments": {"location": "/loci/infra/decision/m1/"}})
    assert req is not None and req.name == "memory.palace.get"
    assert req.arguments == PalaceGetArgs(location="loci/infra/decision/m1")


def test_palace_list_without_arguments_lists_the_root():
    req = parse_memory_tool_call({"function": {"name": "memory.palace.list", "arguments": ""}})
    assert req is not None and req.arguments == PalaceListArgs(path="")


def test_other_tools_are_not_recall_requests():
    assert parse_memory_tool_call({"function": {"name": "get_weather", "arguments": {}}}) is None
    assert parse_memory_tool_call({"function": {"name": "memory.propose",
                                                "arguments": {"items": []}}}) is None


@pytest.mark.parametrize("call,needle", [
    ({"function": {"name": "memory.search", "arguments": "{not json"}}, "valid JSON"),
    ({"function": {"name": "memory.search", "arguments": "[1, 2]"}}, "JSON object"),
    ({"function": {"name": "memory.search", "arguments": {}}}, "query"),
    ({"function": {"name": "memory.search", "arguments": {"query": "x", "k": 0}}}, "'k'"),
    ({"function": {"name": "memory.search", "arguments": {"query": "x", "k": True}}}, "'k'"),
    ({"function": {"name": "memory.search", "arguments": {"query": "x", "tags": [1]}}}, "tags"),
    ({"function": {"name": "memory.read", "arguments": {"ids": []}}}, "ids"),
    ({"function": {"name": "memory.palace.get", "arguments": {}}}, "location"),
    ({"function": {"arguments": {}}}, "name"),
    ({"function": "memory.search"}, "object"),
])
def test_bad_memory_calls_raise_a_clear_error(call, needle):
    with pytest.raises(ToolCallError, match=needle):
        parse_memory_tool_call(call)


def test_a_non_dict_call_raises():
    with pytest.raises(ToolCallError):
        parse_memory_tool_call("memory.search")  # type: ignore[arg-type]
