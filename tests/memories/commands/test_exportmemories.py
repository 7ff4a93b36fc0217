"""manage.py exportmemories USER [--output FILE]: a user's memories as one JSON export."""

import json

from memories import services


def test_it_writes_to_stdout(owner, command):
    services.memory_write(owner=owner, content="to stdout")
    stdout, _ = command("exportmemories", "owner")
    assert json.loads(stdout)["memories"][0]["content"] == "to stdout"
