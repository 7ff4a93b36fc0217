"""The keys of a memory's compressed form (`KEY=value|...`): what the compression prompt asks the
model for, and what entity extraction reads facts by. Kept apart from both so that the extractor
stays free of Django."""

FACT_KEYS = (
    "TOPIC",
    "PROJECT",
    "DECISION",
    "PREFERENCE",
    "PERSON",
    "PLACE",
    "DATE",
    "STACK",
    "PROBLEM",
    "SOLUTION",
    "GOAL",
    "CONSTRAINT",
    "FACT",
    "EVENT",
)
