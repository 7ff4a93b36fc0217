"""Indexing: texts cut into pieces, embedded and stored as vectors and keyword statistics; the
embedding models; the queue that sends work to the worker; and the lifecycle memories and notes
share (pending, claimed, indexed, failed)."""
