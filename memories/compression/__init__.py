"""Compression: a memory's one-line fact form, written by a chat model behind any
OpenAI-compatible endpoint."""
