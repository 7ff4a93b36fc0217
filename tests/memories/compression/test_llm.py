"""The chat client against a real local chat-completions server: the request, the answer, and
how each kind of failure is reported."""

import pytest

from memories.compression import llm
from tests.memories.chat_server import Reply
from tests.memories.conftest import API_KEY, MODEL


def ask(max_tokens: int = 50) -> llm.ChatAnswer:
    return llm.chat_complete(system="Be terse.", user="Say hi.", max_tokens=max_tokens)


def test_it_sends_the_model_both_messages_temperature_0_the_cap_and_the_key(chat_server):
    chat_server.answer("FACT=hi")
    assert ask(max_tokens=77) == llm.ChatAnswer(text="FACT=hi", truncated=False)
    [request] = chat_server.requests
    assert request["model"] == MODEL
    assert request["messages"] == [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "Say hi."},
    ]
    assert request["temperature"] == 0
    assert request["max_tokens"] == 77
    assert chat_server.headers[0]["authorization"] == f"Bearer {API_KEY}"
    assert chat_server.headers[0]["host"].startswith("127.0.0.1:")


def test_an_answer_stopped_at_the_cap_is_marked_truncated(chat_server):
    chat_server.script(Reply(content="TOPIC=half of it", finish_reason="length"))
    assert ask().truncated is True


@pytest.mark.parametrize("reply", [Reply(content=None), Reply(content="")])
def test_a_missing_or_empty_message_is_an_empty_answer(chat_server, reply):
    chat_server.script(reply)
    assert ask() == llm.ChatAnswer(text="", truncated=False)


def test_a_completion_without_choices_is_an_empty_answer(chat_server):
    body = b'{"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": []}'
    chat_server.script(Reply(body=body))
    assert ask().text == ""


def test_a_slow_server_is_a_transient_timeout(chat_server, settings):
    settings.GNOSEM_LLM_TIMEOUT_SECONDS = 0.3
    chat_server.script(Reply(content="FACT=late", delay=1.5))
    with pytest.raises(llm.LLMError, match=r"no answer within 0\.3 s") as raised:
        ask()
    assert raised.value.transient is True


def test_a_refused_connection_is_transient(closed_port_url):
    with pytest.raises(llm.LLMError, match=f"cannot reach {closed_port_url}") as raised:
        ask()
    assert raised.value.transient is True


@pytest.mark.parametrize("status", [429, 500, 502, 503, 408])
def test_rate_limits_and_server_errors_are_transient(chat_server, status):
    chat_server.script(Reply(status=status))
    with pytest.raises(llm.LLMError, match=f"HTTP {status}: scripted failure {status}") as raised:
        ask()
    assert raised.value.transient is True
    assert raised.value.retry_after is None


@pytest.mark.parametrize(("header", "seconds"), [("12", 12.0), ("0.5", 0.5), ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0)])
def test_a_rate_limit_passes_on_the_servers_retry_after(chat_server, header, seconds):
    chat_server.script(Reply(status=429, headers={"Retry-After": header}))
    with pytest.raises(llm.LLMError) as raised:
        ask()
    assert raised.value.retry_after == seconds


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_are_not_transient_and_carry_the_servers_message(chat_server, status):
    chat_server.script(Reply(status=status))
    with pytest.raises(llm.LLMError, match=f"HTTP {status}: scripted failure") as raised:
        ask()
    assert raised.value.transient is False


def test_an_ollama_style_error_string_is_reported(chat_server):
    chat_server.script(Reply(status=404, body=b'{"error": "model \\"llama9\\" not found, try pulling it first"}'))
    with pytest.raises(llm.LLMError, match='HTTP 404: model "llama9" not found'):
        ask()


@pytest.mark.parametrize("body", [b"<html>502 Bad Gateway</html>", b"not json at all", b'{"unexpected": true}'])
def test_a_garbage_body_is_an_error_that_is_not_transient(chat_server, body):
    chat_server.script(Reply(body=body))
    with pytest.raises(llm.LLMError, match="the answer is not a chat completion") as raised:
        ask()
    assert raised.value.transient is False


def test_a_long_error_message_is_clipped(chat_server):
    chat_server.script(Reply(status=400, body=b'{"error": {"message": "' + b"x" * 5000 + b'"}}'))
    with pytest.raises(llm.LLMError) as raised:
        ask()
    assert len(str(raised.value)) <= 300


def test_compression_is_configured_only_with_both_a_base_url_and_a_model(settings):
    assert llm.llm_configured() is False
    settings.GNOSEM_LLM_BASE_URL = "http://127.0.0.1:11434/v1"
    assert llm.llm_configured() is False
    settings.GNOSEM_LLM_MODEL = "llama3.1:8b"
    assert llm.llm_configured() is True
