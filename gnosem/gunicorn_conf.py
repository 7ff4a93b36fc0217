"""gunicorn settings used by `manage.py serve`; production may pass its own `-c`."""

import os
from typing import Any

workers = int(os.environ.get("GNOSEM_WEB_WORKERS", "2"))
threads = int(os.environ.get("GNOSEM_WEB_THREADS", "4"))
worker_class = "gthread"
timeout = 60
keepalive = 30  # MCP clients call in bursts; keep their connection between calls
accesslog = "-"
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms'


def post_worker_init(worker: Any) -> None:  # a gunicorn worker
    """Load the embedding model search uses and its query encoder before the first request, not
    during it (the configured one when the database cannot say which: /healthz must still answer)."""
    from memories.indexing.embedding import configured_model_name, get_embedder
    from memories.indexing.vectors import serving_model_name

    try:
        model_name = serving_model_name()
    except Exception:
        model_name = configured_model_name()
    get_embedder(model_name).warm_up_queries()
