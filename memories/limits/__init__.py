"""Limits: what an account may store (quotas) and how often it may ask (rate limits)."""
