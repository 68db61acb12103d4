"""Builders and doubles the tests share: tiny models, fake LLM clients, the loopback chat server, fault scenarios."""
