"""manage.py compressmemories against a real local chat-completions server."""

import itertools
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memories import services
from memories.models import CompressionStatus, Memory
from tests.memories.chat_server import Reply
from tests.memories.conftest import GOOD, RAW
from tests.memories.stored import store


def long_memory(owner, status: str, *, optimized: str | None = None, content: str = RAW) -> Memory:
    """A stored memory in a given compression state (as earlier runs would have left it); each
    one's text its own (the same text again would return the memory already written)."""
    memory = services.memory_write(owner=owner, content=f"{content} Note {next(_NUMBERS)}.")
    store(memory.pk, compression_status=status, content_optimized=optimized, compression_error="earlier reason")
    return memory


_NUMBERS = itertools.count(1)


def compress(*args: str) -> str:
    out = StringIO()
    call_command("compressmemories", *args, stdout=out)
    return out.getvalue()


def statuses() -> dict[int, str]:
    return dict(Memory.objects.values_list("pk", "compression_status"))


def test_it_refuses_to_run_without_a_model(owner):
    long_memory(owner, CompressionStatus.DISABLED)
    with pytest.raises(CommandError, match="Compression is off: set GNOSEM_LLM_BASE_URL and GNOSEM_LLM_MODEL"):
        compress()


def test_by_default_it_compresses_memories_written_while_off_or_failed(owner, chat_server, capsys):
    chat_server.answer(GOOD)
    off = long_memory(owner, CompressionStatus.DISABLED)
    failed = long_memory(owner, CompressionStatus.LLM_ERROR)
    judged = long_memory(owner, CompressionStatus.MALFORMED)
    done = long_memory(owner, CompressionStatus.COMPRESSED, optimized="TOPIC=old")

    assert compress() == "2 of 2 memories: compressed 2.\n"

    assert statuses() == {
        off.pk: "compressed",
        failed.pk: "compressed",
        judged.pk: "malformed",
        done.pk: "compressed",
    }
    assert Memory.objects.get(pk=off.pk).content_optimized == GOOD
    assert Memory.objects.get(pk=off.pk).compression_error == ""
    assert Memory.objects.get(pk=done.pk).content_optimized == "TOPIC=old"
    assert len(chat_server.requests) == 2
    assert "compressing: 100%" in capsys.readouterr().err  # the progress bar


def test_status_chooses_which_memories_and_all_takes_every_long_one(owner, chat_server):
    chat_server.answer(GOOD)
    judged = long_memory(owner, CompressionStatus.NOT_SHORTER)
    done = long_memory(owner, CompressionStatus.COMPRESSED, optimized="TOPIC=old")
    short = services.memory_write(owner=owner, content="short")

    assert compress("--status", "not_shorter", "--status", "malformed") == "1 of 1 memories: compressed 1.\n"
    assert statuses()[judged.pk] == "compressed"
    assert compress("--all") == "2 of 2 memories: compressed 2.\n"
    assert Memory.objects.get(pk=done.pk).content_optimized == GOOD
    assert statuses()[short.pk] == "skipped_short"
    assert len(chat_server.requests) == 3


def test_user_limits_the_run_to_one_owner(owner, stranger, chat_server):
    chat_server.answer(GOOD)
    mine = long_memory(owner, CompressionStatus.DISABLED)
    theirs = long_memory(stranger, CompressionStatus.DISABLED)
    compress("--user", "stranger")
    assert statuses() == {mine.pk: "disabled", theirs.pk: "compressed"}
    with pytest.raises(CommandError, match="No user with the username or e-mail 'nobody'"):
        compress("--user", "nobody")


def test_all_and_status_exclude_each_other(chat_server):
    with pytest.raises(CommandError, match="not both"):
        compress("--all", "--status", "disabled")


def test_it_records_each_outcome_and_retries_transient_errors(owner, chat_server):
    first = long_memory(owner, CompressionStatus.DISABLED)
    second = long_memory(owner, CompressionStatus.DISABLED)
    chat_server.script(Reply(status=503), Reply(content=GOOD), Reply(content="no pairs"))
    assert compress() == "2 of 2 memories: compressed 1, malformed 1.\n"
    assert statuses() == {first.pk: "compressed", second.pk: "malformed"}
    assert len(chat_server.requests) == 3


def test_it_stops_when_the_model_fails_on_three_memories_in_a_row(owner, closed_port_url):
    memories = [long_memory(owner, CompressionStatus.DISABLED) for _ in range(5)]
    with pytest.raises(CommandError, match=f"3 memories in a row \\(last: cannot reach {closed_port_url}"):
        compress()
    assert [statuses()[memory.pk] for memory in memories] == ["llm_error"] * 3 + ["disabled"] * 2


def test_with_nothing_to_do_it_says_so(owner, chat_server):
    assert compress() == "No memories to compress.\n"


def test_it_finds_the_user_like_the_other_commands_and_says_which(owner, settings, command):
    settings.GNOSEM_LLM_BASE_URL = "http://127.0.0.1:9/v1"  # never called: there is nothing to compress
    settings.GNOSEM_LLM_MODEL = "test-model"
    stdout, stderr = command("compressmemories", "--user", "owner@example.com")
    assert stdout == "No memories to compress.\n"
    assert f"account #{owner.pk} owner <owner@example.com>" in stderr
    with pytest.raises(CommandError, match="No user with the username or e-mail 'nobody'"):
        command("compressmemories", "--user", "nobody")
