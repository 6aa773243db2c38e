"""The scripted API stubs' answer to the harness's facts question (asked after a pass it records,
docs/replay.md "The facts a pass rests on"), shared by anthropic_stub.py and responses_stub.py.

The question is known by a line of its form list; it is answered without consuming the script:
with the next reply when that is {"facts": [...]} (consumed, answered as `BUGATTI_FACT` lines and
`RESULT OK`), else with `RESULT OK` alone (no facts)."""

QUESTION = "BUGATTI_FACT N contains"


def is_question(user_text):
    return QUESTION in user_text


def reply(script, state, lock):
    """The answer, taking the next scripted reply when it holds the facts (`state["next"]`)."""
    with lock:
        i = state["next"]
        if i < len(script) and "facts" in script[i]:
            state["next"] += 1
            lines = ["BUGATTI_FACT " + f for f in script[i]["facts"]]
            return {"text": "\n".join(lines + ["RESULT OK"])}
    return {"text": "RESULT OK"}
