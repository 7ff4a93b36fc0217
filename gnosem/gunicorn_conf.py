"""gunicorn settings used by `manage.py serve`; production may pass its own `-c`."""

import os

workers = int(os.environ.get("GNOSEM_WEB_WORKERS", "2"))
threads = int(os.environ.get("GNOSEM_WEB_THREADS", "4"))
worker_class = "gthread"
timeout = 60
keepalive = 30  # MCP clients call in bursts; keep their connection between calls
accesslog = "-"
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms'


def post_worker_init(worker) -> None:
    """Load the embedding model and its query encoder before the first request, not during it."""
    from memories.embedding import get_embedder

    embedder = get_embedder()
    embedder.embed_query("warm up the query path").result()
