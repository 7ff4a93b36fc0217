"""Notes: long documents (Markdown, text, PDF) kept whole, cut into passages and searched beside
memories."""
